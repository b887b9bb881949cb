#!/usr/bin/env python3
"""
circles.py - fail on a circle of source files that take each other's names.

Reads every .c and .h of the product parts (PARTS below; tests and benches
are not parts) as text:

  - the `#include "..."` lines, resolved against the including file's folder
    and then the parts' folders (meson's include_directories), transitively;
  - the names each .c defines for other files: functions and variables at
    file scope that are not `static` (a header's own inline functions belong
    to the header, not to a .c).

A .c file A depends on a .c file B when A uses a name B defines and A can see
it: the name appears in a header A includes, directly or through others. A
circle is a set of two or more .c files that reach each other through such
uses (a strongly connected component). Each is printed with the names every
edge carries; the exit status is 1 when there is one that circles.allow does
not list, else 0.

circles.allow lists known circles, one a line, as the sorted paths of its
files joined by spaces ('#' starts a comment). A listed circle that is no
longer there is reported, so the list can be pruned, but is not a failure.

  circles.py [--root DIR] [--allow FILE] [--graph]
  circles.py --self-test [--root DIR] [--allow FILE]

--graph prints every edge. --self-test copies the parts into a temporary
folder, checks the copy passes as the tree does, then plants a circle (one
file given a use of a name of a file that already uses it) and a circle
through an include alone, and fails unless the check fails on each, naming
the planted files.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

PARTS = ['common', 'engine', 'ledger', 'hypotheses', 'guards', 'harness', 'holdout', 'reports',
         'cli']

IDENT = re.compile(r'[A-Za-z_]\w*')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
KEYWORDS = {'if', 'while', 'for', 'switch', 'return', 'sizeof', 'do', 'else', 'case', 'goto',
            'static', 'extern', 'typedef', 'struct', 'union', 'enum', 'const', 'volatile',
            'inline', 'unsigned', 'signed', 'int', 'char', 'void', 'long', 'short', 'float',
            'double', 'register', 'restrict', '_Bool', '_Noreturn', '_Thread_local',
            '__attribute__', '__thread', '_Alignas', '_Atomic', '_Static_assert'}


def strip(text):
    """The text without comments, string and character literals (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '/' and i + 1 < n and text[i + 1] == '*':
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j) or ' ')
            i = j
        elif c == '/' and i + 1 < n and text[i + 1] == '/':
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def drop_directives(text):
    """Preprocessor lines (with their continuations) blanked out."""
    lines = text.split('\n')
    out, cont = [], False
    for line in lines:
        if cont or line.lstrip().startswith('#'):
            cont = line.endswith('\\')
            out.append('')
        else:
            out.append(line)
    return '\n'.join(out)


def definitions(code):
    """Names a .c file defines for other files: non-static file-scope functions and variables."""
    names = set()
    depth, head, i, n = 0, [], 0, len(code)
    type_head = ''
    while i < n:
        c = code[i]
        if depth == 0:
            if c == '{' or c == ';':
                h = ''.join(head)
                toks = IDENT.findall(h)
                local = 'static' in toks or 'extern' in toks or 'typedef' in toks
                if not local and toks:
                    if '=' in h:
                        # a variable with an initialiser
                        m = IDENT.findall(h.split('=', 1)[0])
                        if m and m[-1] not in KEYWORDS:
                            names.add(m[-1])
                    elif '(' in h and c == '{':
                        # a function definition: the name before the first '(' at depth 0
                        pre = h.split('(', 1)[0]
                        m = IDENT.findall(pre)
                        if m and m[-1] not in KEYWORDS:
                            names.add(m[-1])
                    elif '(' not in h and c == ';':
                        # "int x;" defines x; "struct s;" declares a type
                        m = IDENT.findall(re.sub(r'\[[^\]]*\]', '', h))
                        tagged = m and m[0] in ('struct', 'union', 'enum') and len(m) == 2
                        if len(m) >= 2 and not tagged and m[-1] not in KEYWORDS:
                            names.add(m[-1])
                head = []
                type_head = h if c == '{' and '(' not in h and '=' not in h else ''
                if c == '{':
                    depth = 1
                    # an initialiser's braces end with ';' at depth 0: skip to it
                    if '=' in h:
                        depth = 0
                        j, d = i, 0
                        while j < n:
                            if code[j] == '{':
                                d += 1
                            elif code[j] == '}':
                                d -= 1
                            elif code[j] == ';' and d == 0:
                                break
                            j += 1
                        i = j
            elif c == '}':
                head = []
            else:
                head.append(c)
        else:
            if c == '{':
                depth += 1
            elif c == '}':
                depth -= 1
                if depth == 0:
                    # "static struct { ... } name[] = ...;": the words before the body
                    # still qualify the name after it
                    head = list(type_head + ' ')
        i += 1
    return names


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = []
        for part in PARTS:
            top = os.path.join(root, part)
            for d, subdirs, fs in os.walk(top):
                subdirs.sort()
                for f in sorted(fs):
                    if f.endswith('.c') or f.endswith('.h'):
                        self.files.append(os.path.relpath(os.path.join(d, f), root))
        self.dirs = sorted({os.path.dirname(f) for f in self.files})
        self.text = {}
        self.includes = {}
        for f in self.files:
            with open(os.path.join(root, f), encoding='utf-8', errors='replace') as fh:
                raw = fh.read()
            self.includes[f] = [self.resolve(f, inc) for inc in INCLUDE.findall(strip_keep_includes(raw))]
            self.text[f] = drop_directives(strip(raw))
        self.defs = {}
        for f in self.files:
            if f.endswith('.c'):
                for name in definitions(self.text[f]):
                    self.defs.setdefault(name, set()).add(f)
        self.tokens = {f: set(IDENT.findall(self.text[f])) for f in self.files}

    def resolve(self, f, inc):
        here = os.path.normpath(os.path.join(os.path.dirname(f), inc))
        if here in self.files_set():
            return here
        for d in self.dirs:
            p = os.path.normpath(os.path.join(d, inc))
            if p in self.files_set():
                return p
        return None  # a system or generated header

    def files_set(self):
        if not hasattr(self, '_fs'):
            self._fs = set(self.files)
        return self._fs

    def seen_headers(self, f):
        seen, todo = set(), [h for h in self.includes[f] if h]
        while todo:
            h = todo.pop()
            if h in seen:
                continue
            seen.add(h)
            todo.extend(x for x in self.includes.get(h, []) if x)
        return seen

    def edges(self):
        """{(a, b): sorted names} for every .c a that uses a name .c b defines and a can see."""
        out = {}
        for a in self.files:
            if not a.endswith('.c'):
                continue
            visible = set()
            for h in self.seen_headers(a):
                visible |= self.tokens[h]
            for name in self.tokens[a] & visible:
                for b in self.defs.get(name, ()):
                    if b != a and name not in definitions_cache(self, a):
                        out.setdefault((a, b), set()).add(name)
        return {k: sorted(v) for k, v in out.items()}


_defs_cache = {}


def definitions_cache(tree, f):
    key = (id(tree), f)
    if key not in _defs_cache:
        _defs_cache[key] = definitions(tree.text[f])
    return _defs_cache[key]


def strip_keep_includes(raw):
    """Comments removed but string literals kept, so #include "x" stays readable."""
    return re.sub(r'/\*.*?\*/', ' ', raw, flags=re.S)


def circles(edges):
    """Strongly connected components of two or more files (Tarjan), each sorted."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def read_allow(path):
    allow = set()
    if path and os.path.exists(path):
        with open(path, encoding='utf-8') as fh:
            for line in fh:
                line = line.split('#', 1)[0].strip()
                if line:
                    allow.add(' '.join(sorted(line.split())))
    return allow


def check(root, allow_path, graph=False, out=sys.stdout):
    """Print the circles of the tree at root; 1 if one is not allowed, else 0."""
    tree = Tree(root)
    edges = tree.edges()
    if graph:
        for (a, b), names in sorted(edges.items()):
            print(f'{a} -> {b}: {", ".join(names)}', file=out)
    allow = read_allow(allow_path)
    found = circles(edges)
    bad = 0
    for comp in found:
        key = ' '.join(comp)
        known = key in allow
        bad += not known
        print(f'{"known" if known else "circle"}: {len(comp)} files: {", ".join(comp)}', file=out)
        for a in comp:
            for b in comp:
                if (a, b) in edges:
                    print(f'  {a} -> {b}: {", ".join(edges[(a, b)])}', file=out)
    keys = {' '.join(c) for c in found}
    for key in sorted(allow - keys):
        print(f'note: {allow_path} lists a circle that is gone: {key}', file=out)
    nc = sum(1 for f in tree.files if f.endswith('.c'))
    print(f'{nc} source files, {len(edges)} edges, {len(found)} circles, {bad} not allowed',
          file=out)
    return 1 if bad else 0


def run_copy(me, copy, allow):
    p = subprocess.run([sys.executable, me, '--root', copy, '--allow', allow],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def plant_use(tree, copy):
    """Give b a use of a name a defines, for an edge a -> b with no way back: (a, b)."""
    edges = tree.edges()
    reach = {}
    for x, y in edges:
        reach.setdefault(x, set()).add(y)

    def reaches(x, y):
        seen, todo = set(), [x]
        while todo:
            v = todo.pop()
            if v == y:
                return True
            if v not in seen:
                seen.add(v)
                todo.extend(reach.get(v, ()))
        return False

    # prefer a pair the reader knows: proof.c uses verify.c, verify.c never proof.c
    pairs = sorted(edges)
    pairs.sort(key=lambda e: e != ('ledger/proof.c', 'ledger/verify.c'))
    for a, b in pairs:
        if reaches(b, a):
            continue
        for name in sorted(definitions_cache(tree, a)):
            hdrs = [h for h in sorted(tree.seen_headers(a) | {h for h in tree.files if h.endswith('.h')})
                    if name in tree.tokens[h] and h.endswith('.h')]
            if not hdrs:
                continue
            rel = os.path.relpath(hdrs[0], os.path.dirname(b))
            with open(os.path.join(copy, b), 'a', encoding='utf-8') as fh:
                fh.write(f'\n#include "{rel}"\nvoid circle_planted(void);\n'
                         f'void circle_planted(void) {{ (void)&{name}; }}\n')
            return a, b, name
    return None


def self_test(root, allow_path):
    me = os.path.abspath(__file__)
    allow_path = os.path.abspath(allow_path) if allow_path else ''
    with tempfile.TemporaryDirectory(prefix='circles.') as tmp:
        for part in PARTS:
            src = os.path.join(root, part)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(tmp, part),
                                ignore=shutil.ignore_patterns('*.py', '*.sh', '*.json', '*.md'))
        allow = os.path.join(tmp, 'circles.allow')
        if allow_path and os.path.exists(allow_path):
            shutil.copy(allow_path, allow)
        rc, text = run_copy(me, tmp, allow)
        if rc != 0:
            print('self-test: the unchanged copy already fails:\n' + text)
            return 1
        print('self-test: the unchanged copy passes')

        # 1. a use back along an existing edge
        tree = Tree(tmp)
        planted = plant_use(tree, tmp)
        if not planted:
            print('self-test: found no edge to plant a circle along')
            return 1
        a, b, name = planted
        print(f'self-test: planted a use of {name} ({a}) in {b}, which {a} already uses')
        rc, text = run_copy(me, tmp, allow)
        print(text, end='')
        want = f'  {b} -> {a}: '
        if rc != 1 or want not in text:
            print(f'self-test: FAIL: the check did not fail naming {b} -> {a} (exit {rc})')
            return 1
        print('self-test: the check fails on it, naming both files')

    # 2. a circle made by two new files and their headers alone
    with tempfile.TemporaryDirectory(prefix='circles.') as tmp:
        os.makedirs(os.path.join(tmp, 'common'))
        files = {
            'common/ping.h': 'int ping(int n);\n',
            'common/pong.h': 'int pong(int n);\n',
            'common/ping.c': '#include "pong.h"\n#include "ping.h"\n'
                             'int ping(int n) { return n ? pong(n - 1) : 0; }\n',
            'common/pong.c': '#include "ping.h"\n#include "pong.h"\n'
                             'int pong(int n) { return n ? ping(n - 1) : 1; }\n',
        }
        for path, body in files.items():
            with open(os.path.join(tmp, path), 'w', encoding='utf-8') as fh:
                fh.write(body)
        rc, text = run_copy(me, tmp, os.path.join(tmp, 'none.allow'))
        print(text, end='')
        if rc != 1 or 'circle: 2 files: common/ping.c, common/pong.c' not in text:
            print(f'self-test: FAIL: ping.c <-> pong.c not reported (exit {rc})')
            return 1
        # and the same pair listed as known passes
        with open(os.path.join(tmp, 'known.allow'), 'w', encoding='utf-8') as fh:
            fh.write('common/pong.c common/ping.c  # listed\n')
        rc, text = run_copy(me, tmp, os.path.join(tmp, 'known.allow'))
        if rc != 0:
            print(f'self-test: FAIL: a listed circle failed (exit {rc}):\n{text}')
            return 1
        print('self-test: ping.c <-> pong.c fails, and passes once listed')
    print('self-test: ok')
    return 0


def main(argv):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    allow = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'circles.allow')
    graph = selftest = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ('--root', '--allow') and i + 1 < len(argv):
            if a == '--root':
                root = argv[i + 1]
            else:
                allow = argv[i + 1]
            i += 2
            continue
        if a == '--graph':
            graph = True
        elif a == '--self-test':
            selftest = True
        else:
            print(f'circles.py: unknown argument {a}', file=sys.stderr)
            return 2
        i += 1
    if selftest:
        return self_test(root, allow)
    return check(root, allow, graph)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
