#!/usr/bin/env python3
"""The tamperer's tools on DIR/ledger.db with raw SQL, computing correct chain
hashes (SHA-256 over the previous hash and the canonical record,
ledger_int.h) but never holding the study's key.

  raw_append.py DB KIND PAYLOAD        append a record (PAYLOAD stored byte for byte)
  raw_append.py --rewrite DB SEQ PAYLOAD
                                       replace seq's payload and recompute every
                                       hash from there on: a valid chain, rewritten
"""
import datetime
import hashlib
import sqlite3
import sys


def record(kind, payload, seq, ts):
    return ('{"kind":"%s","payload":%s,"seq":%d,"ts":"%s"}' % (kind, payload, seq, ts)).encode()


def append(db, kind, payload):
    c = sqlite3.connect(db)
    row = c.execute("SELECT seq, ts, hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (row[0] + 1, bytes(row[2])) if row else (1, bytes(32))
    ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if row and ts <= row[1]:
        ts = row[1][:20] + "999999Z"
    h = hashlib.sha256(prev + record(kind, payload, seq, ts)).digest()
    c.execute("INSERT INTO records(seq, ts, kind, payload, prev, hash) VALUES (?, ?, ?, ?, ?, ?)",
              (seq, ts, kind, payload, prev, h))
    c.commit()
    print(seq)


def rewrite(db, seq, payload):
    c = sqlite3.connect(db)
    c.execute("DROP TRIGGER IF EXISTS records_no_update")
    rows = c.execute("SELECT seq, ts, kind, payload FROM records ORDER BY seq").fetchall()
    prev = bytes(32)
    for s, ts, kind, p in rows:
        if s == seq:
            p = payload
        h = hashlib.sha256(prev + record(kind, p, s, ts)).digest()
        c.execute("UPDATE records SET payload = ?, prev = ?, hash = ? WHERE seq = ?", (p, prev, h, s))
        prev = h
    c.commit()


if sys.argv[1] == "--rewrite":
    rewrite(sys.argv[2], int(sys.argv[3]), sys.argv[4])
else:
    append(sys.argv[1], sys.argv[2], sys.argv[3])
