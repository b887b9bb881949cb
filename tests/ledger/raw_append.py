#!/usr/bin/env python3
"""The tamperer's tool: append a record to DIR/ledger.db with raw SQL, with a
correct chain hash (SHA-256 over the previous hash and the canonical record,
ledger_int.h) but without the study's key. Usage: raw_append.py DB KIND PAYLOAD
(PAYLOAD is stored byte for byte, canonical JSON or not)."""
import datetime
import hashlib
import sqlite3
import sys

db, kind, payload = sys.argv[1], sys.argv[2], sys.argv[3]
c = sqlite3.connect(db)
row = c.execute("SELECT seq, ts, hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
seq, prev = (row[0] + 1, bytes(row[2])) if row else (1, bytes(32))
ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
if row and ts <= row[1]:
    ts = row[1][:20] + "999999Z"
rec = '{"kind":"%s","payload":%s,"seq":%d,"ts":"%s"}' % (kind, payload, seq, ts)
h = hashlib.sha256(prev + rec.encode()).digest()
c.execute("INSERT INTO records(seq, ts, kind, payload, prev, hash) VALUES (?, ?, ?, ?, ?, ?)",
          (seq, ts, kind, payload, prev, h))
c.commit()
print(seq)
