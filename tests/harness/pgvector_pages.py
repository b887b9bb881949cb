#!/usr/bin/python3
"""The paged comparator checked page for page against real pgvector.

The same rows are built both ways: into a PostgreSQL table LIST-partitioned
by the engine's own partition rule (murmur3's finalizer of the id, mod P, so
every partition holds the same rows in the same order on both sides) with a
pgvector HNSW index per partition, and into `coldstudy index build --kind
phnsw`. Each query then runs on both:

- pgvector: ORDER BY v <-> q LIMIT k over the parent table (Merge Append
  over the partitions' index scans, as the seed's query ran), in its own
  transaction; the indexes' buffer accesses come from
  pg_stat_get_xact_blocks_fetched / _hit (every ReadBuffer of an index
  page). Cold: the server is restarted before the query, so an index
  page's first access is a read and the reads are the distinct index pages.
- the engine: `coldstudy index query --cold` on the one query: its reads
  less its heap reads are the index pages it read cold; reads + buffer
  hits - heap reads are its index page accesses.

Then, on the first --timed-nq queries, the serial-against-fan-out ratio
cold on both (the seed's lever), each query run four times from a cold
start: the server stopped, its data directory evicted from the page cache
(posix_fadvise DONTNEED on every file) and started again before each
pgvector run; `index query --cold` (the index's files evicted, the pool
emptied) for the engine. Serial is the parent table's Merge Append on one
connection; fan-out is --fanout connections (psycopg2, one thread each),
each querying its share of the partitions directly (ORDER BY v <-> q
LIMIT k), the rows merged by distance: the harness's fan-out. The engine
runs `--mode serial` and `--mode fanout:C`. The wall is the query's alone:
connections are opened and their settings made before the clock starts.

Both graphs are built from the same rows in the same order with the same m
and ef_construction, but their level draws come from different generators,
so the graphs (and the pages a query touches) agree in distribution, not
query for query. The output is one JSON object: per-query figures and
their ratio's median and worst.

Usage: pgvector_pages.py --cs COLDSTUDY --bindir PGBIN --work DIR
       [--n 8000] [--dim 128] [--parts 4] [--nq 100] [--cold-nq 20]
       [--ef-search 40] [--port 5611] [--seed 1] [--noise 1.0] [--out FILE]
       [--timed-nq 10] [--fanout min(parts, 8)]
Run as root: the server runs as the postgres user.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np


def fmix32(i):
    h = i & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def vec_text(v):
    return "[" + ",".join("%.9g" % float(x) for x in v) + "]"


class Server:
    def __init__(self, bindir, data, sock, port):
        self.bindir, self.data, self.sock, self.port = bindir, data, sock, port
        self.opts = "-k %s -p %d -c listen_addresses='' -c shared_buffers=64MB" % (sock, port)

    def pg(self, *args, check=True):
        return subprocess.run(["runuser", "-u", "postgres", "--"] + list(args),
                              check=check, capture_output=True, text=True)

    def initdb(self):
        self.pg(os.path.join(self.bindir, "initdb"), "-k", "-A", "trust", "-U", "postgres",
                "-D", self.data)

    def start(self):
        self.pg(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-l",
                os.path.join(self.sock, "log"), "-w", "-t", "60", "-o", self.opts, "start")

    def stop(self, check=True):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.pg(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "fast", "-w",
                    "stop", check=check)

    def psql(self, sql, inp=None):
        r = subprocess.run([os.path.join(self.bindir, "psql"), "-X", "-q", "-A", "-t", "-F", "|",
                            "-v", "ON_ERROR_STOP=1", "-h", self.sock, "-p", str(self.port),
                            "-U", "postgres", "-d", "postgres", "-f", "-"],
                           input=sql, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("psql: " + r.stderr.strip().splitlines()[-1])
        return r.stdout


# The seed's plan: Merge Append over the partitions' index scans in the one
# backend. A parallel plan (Gather Merge over a Parallel Append, which the
# planner picks for many partitions) runs scans in workers whose buffer
# counts never reach this backend's counters.
SESSION = ("SET LOCAL enable_seqscan = off;\n"
           "SET LOCAL max_parallel_workers_per_gather = 0;\n")


def evict_tree(root):
    """Drop a stopped server's files from the page cache (clean after its
    shutdown checkpoint and a sync), so that its next reads go to the disk."""
    os.sync()
    for d, _, files in os.walk(root):
        for f in files:
            try:
                fd = os.open(os.path.join(d, f), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def dev_reads(path):
    """(read requests, sectors read) so far on the block device holding path,
    or None where /sys does not say."""
    st = os.stat(path)
    try:
        with open("/sys/dev/block/%d:%d/stat" % (os.major(st.st_dev), os.minor(st.st_dev))) as f:
            v = f.read().split()
        return int(v[0]), int(v[2])
    except (OSError, IndexError, ValueError):
        return None


def dev_delta(a, b):
    return None if a is None or b is None else {"reads": b[0] - a[0], "kib": (b[1] - a[1]) // 2}


def cold_restart(srv):
    srv.stop()
    evict_tree(srv.data)
    srv.start()


def connect(srv, ef, warm):
    """A session with the query's settings whose caches hold what planning
    `warm` needs (the catalog rows, pgvector's library and operators): the
    planner sizes an hnsw index from its relation, reading none of its
    pages, so the clock then times the scans' reads, as a pooled
    connection's would be."""
    import psycopg2
    c = psycopg2.connect(host=srv.sock, port=srv.port, user="postgres", dbname="postgres")
    c.autocommit = True
    cur = c.cursor()
    cur.execute("SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0; "
                "SET hnsw.ef_search = %d" % ef)
    for sql in warm:
        cur.execute("EXPLAIN " + sql)
        cur.fetchall()
    return c


def pg_serial_timed(srv, q, k, ef):
    """One cold Merge Append over the parent table: (ms, ids, the block
    device's reads while it ran)."""
    cold_restart(srv)
    sql = "SELECT id FROM items ORDER BY v <-> '%s' LIMIT %d" % (vec_text(q), k)
    c = connect(srv, ef, [sql])
    try:
        cur = c.cursor()
        d0 = dev_reads(srv.data)
        t0 = time.perf_counter()
        cur.execute(sql)
        ids = [r[0] for r in cur.fetchall()]
        ms = (time.perf_counter() - t0) * 1e3
        dev = dev_delta(d0, dev_reads(srv.data))
    finally:
        c.close()
    return ms, ids, dev


def pg_fanout_timed(srv, q, k, ef, parts, width):
    """One cold fan-out: `width` connections, each querying partitions
    p = w, w + width, ... in turn; the rows merged by (distance, id)."""
    cold_restart(srv)
    lit = vec_text(q)
    sqls = ["SELECT v <-> '%s', id FROM items_%d ORDER BY v <-> '%s' LIMIT %d" % (lit, p, lit, k)
            for p in range(parts)]
    conns = [connect(srv, ef, sqls[w::width]) for w in range(width)]
    rows, errs = [], []
    go = threading.Barrier(width + 1)

    def worker(w):
        cur = conns[w].cursor()
        go.wait()
        try:
            for sql in sqls[w::width]:
                cur.execute(sql)
                rows.extend(cur.fetchall())
        except Exception as e:  # reported below, the run refused
            errs.append(str(e))

    th = [threading.Thread(target=worker, args=(w,)) for w in range(width)]
    for t in th:
        t.start()
    d0 = dev_reads(srv.data)
    go.wait()
    t0 = time.perf_counter()
    for t in th:
        t.join()
    ms = (time.perf_counter() - t0) * 1e3
    dev = dev_delta(d0, dev_reads(srv.data))
    for c in conns:
        c.close()
    if errs:
        raise RuntimeError("fan-out query: " + errs[0])
    return ms, [i for _, i in sorted(rows)[:k]], dev


def engine_timed(cs, ix, qfile, i, k, ef, mode):
    d0 = dev_reads(ix)
    r = subprocess.run([cs, "index", "query", ix, "--queries", "npy:%s[%d:%d]" % (qfile, i, i + 1),
                        "--data", "npy:" + os.path.join(os.path.dirname(qfile), "base.npy"),
                        "--k", str(k), "--ef-search", str(ef), "--cold", "--mode", mode,
                        "--json", "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("coldstudy index query --mode %s: %s" % (mode, r.stderr.strip()))
    dev = dev_delta(d0, dev_reads(ix))
    j = json.loads(r.stdout)
    return j["lat_mean_ms"], j["recall_at_k"], j["engine_reads"], dev


def plan_of(srv, q, k, ef):
    """The plan's node names, checked to be the serial Merge Append."""
    out = srv.psql("BEGIN;\n" + SESSION + "SET LOCAL hnsw.ef_search = %d;\n"
                   "EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY v <-> '%s' LIMIT %d;\n"
                   "COMMIT;\n" % (ef, vec_text(q), k))
    nodes = [l.strip().lstrip("->").strip().split(" ")[0] for l in out.splitlines()
             if l.strip() and not l.strip().startswith(("Order By", "Sort Key"))]
    if "Gather" in out or "Merge Append" not in out and not "Index Scan" in out:
        raise RuntimeError("not a serial index plan: %s" % " / ".join(nodes))
    return [l.strip() for l in out.splitlines() if "Append" in l or "Limit" in l][:3]


def query_sql(q, k, ef, parts):
    return ("BEGIN;\n" + SESSION +
            "SET LOCAL hnsw.ef_search = %d;\n"
            "SELECT string_agg(id::text, ',') FROM (SELECT id FROM items ORDER BY v <-> '%s' "
            "LIMIT %d) s;\n"
            "SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(c.oid)), 0), "
            "coalesce(sum(pg_stat_get_xact_blocks_hit(c.oid)), 0) FROM pg_class c "
            "WHERE c.relname ~ '^items_[0-9]+_v_idx$';\n"
            "SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(c.oid)), 0), "
            "coalesce(sum(pg_stat_get_xact_blocks_hit(c.oid)), 0) FROM pg_class c "
            "WHERE c.relname ~ '^items_[0-9]+$';\nCOMMIT;\n") % (ef, vec_text(q), k)


def parse_query(out):
    lines = [l for l in out.splitlines() if l.strip()]
    if len(lines) != 3:
        raise RuntimeError("unexpected psql output: %r" % out[:200])
    ids = [int(x) for x in lines[0].split(",")] if lines[0] else []
    f, h = (int(x) for x in lines[1].split("|"))
    hf, hh = (int(x) for x in lines[2].split("|"))
    return ids, f, h, hf, hh


def engine_query(cs, ix, qfile, i, k, ef):
    r = subprocess.run([cs, "index", "query", ix, "--queries", "npy:%s[%d:%d]" % (qfile, i, i + 1),
                        "--data", "npy:" + os.path.join(os.path.dirname(qfile), "base.npy"),
                        "--k", str(k), "--ef-search", str(ef), "--cold", "--json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("coldstudy index query: " + r.stderr.strip())
    return json.loads(r.stdout)


def recall(ids, truth):
    return len(set(ids) & set(truth)) / float(len(truth))


def summary(ratios):
    a = np.array(ratios, dtype=float)
    worst = a[np.argmax(np.abs(np.log(a)))]
    return {"n": int(len(a)), "median": float(np.median(a)), "worst": float(worst),
            "min": float(a.min()), "max": float(a.max())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cs", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--n", type=int, default=8000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--nq", type=int, default=100)
    ap.add_argument("--cold-nq", type=int, default=20)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--ef-search", type=int, default=40)
    ap.add_argument("--port", type=int, default=5611)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--noise", type=float, default=1.0,
                    help="spread of the rows about their centres (unit normal centres)")
    ap.add_argument("--out")
    ap.add_argument("--timed-nq", type=int, default=10,
                    help="queries timed cold serial and fan-out on both sides")
    ap.add_argument("--fanout", type=int, default=0,
                    help="fan-out connections and engine readers (default: min(parts, 8))")
    a = ap.parse_args()
    width = a.fanout or min(a.parts, 8)
    timed_nq = min(a.timed_nq, a.nq)
    if timed_nq:
        try:
            import psycopg2  # noqa: F401
        except ImportError:
            print("no psycopg2 (apt-get install python3-psycopg2)", file=sys.stderr)
            return 77

    w = a.work
    os.makedirs(w, exist_ok=True)
    os.chmod(w, 0o755)
    rng = np.random.default_rng(a.seed)
    NOISE = a.noise
    centres = rng.normal(size=(max(8, a.n // 500), a.dim)).astype(np.float32)
    base = (centres[rng.integers(0, len(centres), a.n)] +
            NOISE * rng.normal(size=(a.n, a.dim))).astype(np.float32)
    queries = (centres[rng.integers(0, len(centres), a.nq)] +
               NOISE * rng.normal(size=(a.nq, a.dim))).astype(np.float32)
    np.save(os.path.join(w, "base.npy"), base)
    qfile = os.path.join(w, "queries.npy")
    np.save(qfile, queries)
    # exact distances a query at a time (a whole broadcast is nq x n x dim doubles)
    b64 = base.astype(np.float64)
    truth = np.array([np.argsort(((b64 - q.astype(np.float64)) ** 2).sum(-1),
                                 kind="stable")[:a.k] for q in queries])

    # ---- pgvector ----
    data, sock = os.path.join(w, "data"), os.path.join(w, "sock")
    for d in (data, sock):
        os.makedirs(d, exist_ok=True)
        shutil.chown(d, "postgres", "postgres")
    srv = Server(a.bindir, data, sock, a.port)
    srv.initdb()
    srv.start()
    try:
        rows = os.path.join(w, "rows.tsv")
        with open(rows, "w") as f:
            for i in range(a.n):
                f.write("%d\t%d\t%s\n" % (i, fmix32(i) % a.parts, vec_text(base[i])))
        ddl = ["CREATE EXTENSION vector;",
               "CREATE TABLE items (id int, part int, v vector(%d)) PARTITION BY LIST (part);"
               % a.dim]
        for p in range(a.parts):
            ddl.append("CREATE TABLE items_%d PARTITION OF items FOR VALUES IN (%d);" % (p, p))
        ddl.append("\\copy items FROM '%s'" % rows)
        ddl.append("SET maintenance_work_mem = '512MB';")
        for p in range(a.parts):
            ddl.append("CREATE INDEX items_%d_v_idx ON items_%d USING hnsw (v vector_l2_ops) "
                       "WITH (m = 16, ef_construction = 64);" % (p, p))
        ddl.append("VACUUM ANALYZE items;")
        ddl.append("CHECKPOINT;")
        t0 = time.time()
        srv.psql("\n".join(ddl) + "\n")
        pg_build_s = time.time() - t0
        version = srv.psql("SELECT extversion FROM pg_extension WHERE extname = 'vector';").strip()
        pages = srv.psql("SELECT (sum(pg_relation_size(c.oid)) / 8192)::bigint FROM pg_class c "
                         "WHERE c.relname ~ '^items_[0-9]+_v_idx$';").strip()

        plan = plan_of(srv, queries[0], a.k, a.ef_search)
        # One session a query: a backend's pending counters start at zero and
        # grow until flushed, so a fresh session's are exactly this query's.
        pgq = []
        for i in range(a.nq):
            ids, f, h, hf, hh = parse_query(srv.psql(query_sql(queries[i], a.k, a.ef_search,
                                                               a.parts)))
            pgq.append({"ids": ids, "index_accesses": f, "heap_accesses": hf})
        for i in range(min(a.cold_nq, a.nq)):
            srv.stop()
            srv.start()
            ids, f, h, hf, hh = parse_query(srv.psql(query_sql(queries[i], a.k, a.ef_search,
                                                               a.parts)))
            pgq[i]["index_reads_cold"] = f - h
            pgq[i]["heap_reads_cold"] = hf - hh
        for i in range(timed_nq):
            pgq[i]["serial_ms"], pgq[i]["serial_ids"], pgq[i]["serial_dev"] = pg_serial_timed(
                srv, queries[i], a.k, a.ef_search)
            pgq[i]["fanout_ms"], pgq[i]["fanout_ids"], pgq[i]["fanout_dev"] = pg_fanout_timed(
                srv, queries[i], a.k, a.ef_search, a.parts, width)
    finally:
        srv.stop(check=False)

    # ---- the engine ----
    ix = os.path.join(w, "ix")
    t0 = time.time()
    subprocess.run([a.cs, "index", "build", "--kind", "phnsw", "--partitions", str(a.parts),
                    "--m", "16", "--ef-construction", "64", "--metric", "l2",
                    "--data", "npy:" + os.path.join(w, "base.npy"), "--out", ix, "-q"],
                   check=True, capture_output=True)
    cv_build_s = time.time() - t0
    cvq = []
    for i in range(a.nq):
        j = engine_query(a.cs, ix, qfile, i, a.k, a.ef_search)
        reads = j["engine_reads"]
        heap = j["heap_reads_per_query"]
        cvq.append({"index_reads_cold": reads - heap,
                    "index_accesses": reads + j["buffer_hits_per_query"] - heap,
                    "recall": j["recall_at_k"]})
    for i in range(timed_nq):
        for m, mode in (("serial", "serial"), ("fanout", "fanout:%d" % width)):
            ms, rc, rd, dev = engine_timed(a.cs, ix, qfile, i, a.k, a.ef_search, mode)
            cvq[i][m + "_ms"], cvq[i][m + "_recall"], cvq[i][m + "_reads"] = ms, rc, rd
            cvq[i][m + "_dev"] = dev

    per = []
    for i in range(a.nq):
        row = {"query": i, "pg_index_accesses": pgq[i]["index_accesses"],
               "cv_index_accesses": cvq[i]["index_accesses"],
               "pg_recall": recall(pgq[i]["ids"], truth[i]), "cv_recall": cvq[i]["recall"],
               "pg_rows": len(pgq[i]["ids"])}
        if "index_reads_cold" in pgq[i]:
            row["pg_index_reads_cold"] = pgq[i]["index_reads_cold"]
            row["cv_index_reads_cold"] = cvq[i]["index_reads_cold"]
        if "serial_ms" in pgq[i]:
            for side, d in (("pg", pgq[i]), ("cv", cvq[i])):
                row[side + "_serial_ms"] = round(d["serial_ms"], 3)
                row[side + "_fanout_ms"] = round(d["fanout_ms"], 3)
                row[side + "_fanout_speedup"] = d["serial_ms"] / d["fanout_ms"]
                row[side + "_serial_dev"] = d["serial_dev"]
                row[side + "_fanout_dev"] = d["fanout_dev"]
            row["pg_fanout_same_ids"] = pgq[i]["serial_ids"] == pgq[i]["fanout_ids"]
            row["pg_fanout_recall"] = recall(pgq[i]["fanout_ids"], truth[i])
            row["cv_fanout_same_recall"] = cvq[i]["serial_recall"] == cvq[i]["fanout_recall"]
            row["cv_fanout_same_reads"] = cvq[i]["serial_reads"] == cvq[i]["fanout_reads"]
        per.append(row)
    acc = [r["cv_index_accesses"] / r["pg_index_accesses"] for r in per]
    cold = [r["cv_index_reads_cold"] / r["pg_index_reads_cold"] for r in per
            if "pg_index_reads_cold" in r]
    res = {"pgvector": version, "plan": plan, "n": a.n, "dim": a.dim, "partitions": a.parts,
           "queries": a.nq, "ef_search": a.ef_search, "k": a.k, "pg_index_pages": int(pages),
           "pg_build_s": round(pg_build_s, 2), "cv_build_s": round(cv_build_s, 2),
           "accesses_ratio": summary(acc), "cold_reads_ratio": summary(cold),
           "pg_recall_mean": float(np.mean([r["pg_recall"] for r in per])),
           "cv_recall_mean": float(np.mean([r["cv_recall"] for r in per])),
           "pg_short_results": sum(1 for r in per if r["pg_rows"] < a.k),
           "pg_cold_reads_mean": float(np.mean([r["pg_index_reads_cold"] for r in per
                                                if "pg_index_reads_cold" in r])),
           "cv_cold_reads_mean": float(np.mean([r["cv_index_reads_cold"] for r in per
                                                if "cv_index_reads_cold" in r])),
           "per_query": per}
    timed = [r for r in per if "pg_fanout_speedup" in r]
    if timed:
        pgs = summary([r["pg_fanout_speedup"] for r in timed])
        cvs = summary([r["cv_fanout_speedup"] for r in timed])
        res.update({
            "fanout": width, "timed_queries": len(timed),
            "pg_fanout_speedup": pgs, "cv_fanout_speedup": cvs,
            # engine's serial/fan-out ratio over pgvector's, query for query
            "fanout_speedup_ratio": summary([r["cv_fanout_speedup"] / r["pg_fanout_speedup"]
                                             for r in timed]),
            "pg_serial_ms_median": float(np.median([r["pg_serial_ms"] for r in timed])),
            "pg_fanout_ms_median": float(np.median([r["pg_fanout_ms"] for r in timed])),
            "cv_serial_ms_median": float(np.median([r["cv_serial_ms"] for r in timed])),
            "cv_fanout_ms_median": float(np.median([r["cv_fanout_ms"] for r in timed])),
            # the block device's read requests and KiB a cold serial query (the engine's
            # whole process: its loading too), beside the pages each side read
            "dev_serial": {side: {f: float(np.median([r[side + "_serial_dev"][f] for r in timed]))
                                  for f in ("reads", "kib")}
                           for side in ("pg", "cv")
                           if all(r[side + "_serial_dev"] for r in timed)},
            "pg_fanout_ids_differ": sum(1 for r in timed if not r["pg_fanout_same_ids"]),
            "cv_fanout_recall_differs": sum(1 for r in timed if not r["cv_fanout_same_recall"]),
        })
    text = json.dumps(res, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "per_query"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
