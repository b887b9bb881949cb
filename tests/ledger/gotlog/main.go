// gotlog: an independent check of coldstudy's published log with the Go
// reference implementation (golang.org/x/mod/sumdb/note and sumdb/tlog).
//
//	gotlog ROOT VKEY [OLD_CHECKPOINT]
//
// ROOT is a directory in the C2SP tlog-tiles layout (coldstudy log tiles).
// It opens ROOT/checkpoint with note.Open and the verifier key VKEY, reads
// the tree (origin, size, root), authenticates the tiles against the root
// with tlog.TileHashReader (TreeHash), then for every entry of the entry
// bundles checks that RecordHash(entry) is the leaf hash the tiles hold
// and that tlog.ProveRecord / CheckRecord prove it into the root. With
// OLD_CHECKPOINT (signed by the same key) it proves the old tree is a
// prefix of the new one (ProveTree / CheckTree). Prints one line and exits
// 0, or prints the failure and exits 1.
package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func fail(f string, a ...interface{}) {
	fmt.Printf("FAIL: "+f+"\n", a...)
	os.Exit(1)
}

// C2SP tile path: no height in the path, entries for data tiles.
func c2spPath(t tlog.Tile) string {
	p := t.Path() // tile/8/L/NNN[.p/W] or tile/8/data/...
	p = strings.TrimPrefix(p, "tile/8/")
	p = strings.Replace(p, "data/", "entries/", 1)
	return "tile/" + p
}

type dirReader struct{ root string }

func (r dirReader) Height() int { return 8 }
func (r dirReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := os.ReadFile(filepath.Join(r.root, c2spPath(t)))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
func (r dirReader) SaveTiles([]tlog.Tile, [][]byte) {}

func openCheckpoint(path string, v note.Verifier) (string, int64, tlog.Hash) {
	msg, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		fail("note.Open %s: %v", path, err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		fail("%s: not a checkpoint", path)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("%s: size: %v", path, err)
	}
	rb, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(rb) != tlog.HashSize {
		fail("%s: root: %v", path, err)
	}
	var h tlog.Hash
	copy(h[:], rb)
	return lines[0], size, h
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: gotlog ROOT VKEY [OLD_CHECKPOINT]")
	}
	root := os.Args[1]
	v, err := note.NewVerifier(strings.TrimSpace(os.Args[2]))
	if err != nil {
		fail("note.NewVerifier: %v", err)
	}
	origin, n, rootHash := openCheckpoint(filepath.Join(root, "checkpoint"), v)
	if origin != v.Name() {
		fail("origin %q is not the key's name %q", origin, v.Name())
	}
	tree := tlog.Tree{N: n, Hash: rootHash}
	hr := tlog.TileHashReader(tree, dirReader{root})
	th, err := tlog.TreeHash(n, hr)
	if err != nil || th != rootHash {
		fail("TreeHash(%d) = %v, %v; checkpoint says %v", n, th, err, rootHash)
	}
	for b := int64(0); b*256 < n; b++ {
		w := n - b*256
		if w > 256 {
			w = 256
		}
		t := tlog.Tile{H: 8, L: -1, N: b, W: int(w)}
		data, err := os.ReadFile(filepath.Join(root, c2spPath(t)))
		if err != nil {
			fail("%v", err)
		}
		for i := int64(0); i < w; i++ {
			if len(data) < 2 {
				fail("%s: entry %d missing", c2spPath(t), i)
			}
			l := int(data[0])<<8 | int(data[1])
			if len(data) < 2+l {
				fail("%s: entry %d truncated", c2spPath(t), i)
			}
			rh := tlog.RecordHash(data[2 : 2+l])
			data = data[2+l:]
			idx := b*256 + i
			stored, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, idx)})
			if err != nil || stored[0] != rh {
				fail("record %d: leaf hash in the tiles is not RecordHash(entry) (%v)", idx, err)
			}
			p, err := tlog.ProveRecord(n, idx, hr)
			if err != nil {
				fail("ProveRecord(%d): %v", idx, err)
			}
			if err := tlog.CheckRecord(p, n, rootHash, idx, rh); err != nil {
				fail("CheckRecord(%d): %v", idx, err)
			}
		}
		if len(data) != 0 {
			fail("%s: %d bytes after the last entry", c2spPath(t), len(data))
		}
	}
	msg := ""
	if len(os.Args) > 3 {
		_, m, oldHash := openCheckpoint(os.Args[3], v)
		p, err := tlog.ProveTree(n, m, hr)
		if err != nil {
			fail("ProveTree(%d, %d): %v", n, m, err)
		}
		if err := tlog.CheckTree(p, n, rootHash, m, oldHash); err != nil {
			fail("CheckTree(%d, %d): %v", n, m, err)
		}
		msg = fmt.Sprintf(", extends the old tree of %d", m)
	}
	fmt.Printf("ok: Go note.Open verified the checkpoint of %s; tlog verified %d records in the tiles%s\n", origin, n, msg)
}
