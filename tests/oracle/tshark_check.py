#!/usr/bin/env python3
"""Cross-check a RoCEv2 pcap against its JSON description using tshark's InfiniBand dissector.

Usage:
  tshark_check.py --pcap FILE --json FILE [--tshark PATH] [--max-report N] [--verbose]

The JSON is an array of objects with an "index" (0-based frame number in the pcap) and any
subset of the keys written by gen_scapy_vectors.py; only the keys present are checked:
  roce, opcode, dqpn, psn, padcount, vlan, ipver,
  reth_va, reth_rkey, reth_len, aeth_syndrome, aeth_msn, immdt, ieth_rkey,
  atomic_va, atomic_rkey, atomic_swap, atomic_cmp, atomic_orig,
  ipv4_csum_ok, udp_csum_ok (tshark's IPv4 header / UDP checksum verification; a zero UDP
    checksum over IPv4 counts as ok),
  icrc (+ icrc_ok: for valid frames tshark's "Invariant CRC" must equal byteswap(icrc)),
  trailer (tshark's "Invariant CRC" must equal byteswap(trailer), valid or not).
If "roce" is absent, a frame counts as RoCE when it has a non-null opcode/dqpn/psn/icrc.

Prints `tshark: N frames, R roce decoded, M mismatches` and exits 1 if M > 0 (2 on usage or
tshark errors).
"""

import argparse
import json
import shutil
import subprocess
import sys

# infiniband.payload heuristic sub-dissectors of tshark 4.0. They guess at the payload of
# SEND/WRITE packets; on random payloads some of them throw (e.g. RPC-over-RDMA on a 0-byte
# SEND Only: "Malformed Packet"), and then the Invariant CRC is never dissected. Disabled when
# the local tshark knows them.
IB_PAYLOAD_HEURISTICS = ["rpcrdma_infiniband", "smcr_infiniband", "smb_direct_infiniband",
                         "iser_infiniband", "sdp_infiniband", "fc_infiniband", "nvme_rdma",
                         "lnet_ib", "mellanox_eoib", "eth_over_ib", "drbd_rdma"]

FIELDS = [
    "frame.number", "_ws.col.Protocol", "vlan.id", "ip.src", "ipv6.src",
    "udp.srcport", "udp.dstport", "ip.checksum.status", "udp.checksum.status",
    "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
    "infiniband.bth.padcnt",
    "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome", "infiniband.aeth.msn",
    "infiniband.immdt", "infiniband.ieth",
    "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt",
    "infiniband.invariant.crc",
    "_ws.expert.message",
]
SEP = "\x1f"


def num(s):
    s = s.strip()
    if s.lower().startswith("0x"):
        return int(s, 16)
    return int(s, 10)


def hexbytes(s):
    return int(s.replace(":", ""), 16)


# JSON key -> (tshark field, converter). tshark dissects AtomicETH's VA and R_Key with the
# RETH fields (infiniband.reth.va / infiniband.reth.r_key).
EXT_CHECKS = {
    "padcount": ("infiniband.bth.padcnt", num),
    "reth_va": ("infiniband.reth.va", num),
    "reth_rkey": ("infiniband.reth.r_key", num),
    "reth_len": ("infiniband.reth.dmalen", num),
    "aeth_syndrome": ("infiniband.aeth.syndrome", num),
    "aeth_msn": ("infiniband.aeth.msn", num),
    "immdt": ("infiniband.immdt", hexbytes),
    "ieth_rkey": ("infiniband.ieth", hexbytes),
    "atomic_va": ("infiniband.reth.va", num),
    "atomic_rkey": ("infiniband.reth.r_key", num),
    "atomic_swap": ("infiniband.atomiceth.swapdt", num),
    "atomic_cmp": ("infiniband.atomiceth.cmpdt", num),
    "atomic_orig": ("infiniband.atomicacketh.origremdt", num),
}


def bswap32(v):
    return int.from_bytes(v.to_bytes(4, "little"), "big")


def usable_heuristics(tshark, pcap):
    """The subset of IB_PAYLOAD_HEURISTICS this tshark accepts for --disable-heuristic
    (an unknown name makes tshark exit with an error)."""
    def accepted(names):
        cmd = [tshark, "-n", "-r", pcap, "-c", "1"]
        for h in names:
            cmd += ["--disable-heuristic", h]
        try:
            return subprocess.run(cmd, capture_output=True, text=True).returncode == 0
        except OSError:
            return False
    if accepted(IB_PAYLOAD_HEURISTICS):
        return list(IB_PAYLOAD_HEURISTICS)
    return [h for h in IB_PAYLOAD_HEURISTICS if accepted([h])]


def run_tshark(tshark, pcap, extra):
    cmd = [tshark, "-n", "-r", pcap] + extra + ["-T", "fields", "-E", "separator=" + SEP,
                                                "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("tshark failed (rc %d): %s\n  command: %s" % (r.returncode, r.stderr.strip(), " ".join(cmd)))
    rows = []
    for line in r.stdout.splitlines():
        parts = line.split(SEP)
        parts += [""] * (len(FIELDS) - len(parts))
        d = {}
        for k, v in zip(FIELDS, parts):
            if k == "_ws.expert.message":
                d[k] = v
            else:
                d[k] = v.split(",")[0] if v else ""  # some IB fields are emitted twice
        rows.append(d)
    return rows


def is_ib(row):
    return row["infiniband.bth.opcode"] != ""


def is_roce_json(o):
    if "roce" in o:
        return bool(o["roce"])
    return any(o.get(k) is not None for k in ("opcode", "dqpn", "psn", "icrc"))


def main():
    ap = argparse.ArgumentParser(description="Check a RoCEv2 pcap against its JSON with tshark")
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--tshark", default=shutil.which("tshark") or "tshark")
    ap.add_argument("--max-report", type=int, default=20, help="mismatches to list (default 20)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    with open(a.json) as fh:
        objs = json.load(fh)
    if isinstance(objs, dict):
        objs = [objs]

    heur = usable_heuristics(a.tshark, a.pcap)
    base = ["-o", "infiniband.rroce.port:4791", "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"]
    for h in heur:
        base += ["--disable-heuristic", h]
    rows = run_tshark(a.tshark, a.pcap, base)
    n = len(rows)

    # Pass 2: tshark's UDP dissector tries the LOWER of the two ports first, so a RoCEv2 frame
    # whose random UDP source port is < 4791 and registered to some other protocol (e.g. 4342
    # LISP, 3544 Teredo) is not decoded as InfiniBand. Re-dissect those with Decode As on
    # their source port.
    redo = {}
    for o in objs:
        i = o.get("index")
        if isinstance(i, int) and 0 <= i < n and is_roce_json(o) and not is_ib(rows[i]) and rows[i]["udp.srcport"]:
            redo.setdefault(rows[i]["udp.srcport"], []).append(i)
    if redo:
        extra = list(base)
        for port in sorted(redo, key=int):
            extra += ["-d", "udp.port==%s,infiniband" % port]
        rows2 = run_tshark(a.tshark, a.pcap, extra)
        for idxs in redo.values():
            for i in idxs:
                rows[i] = rows2[i]
        if a.verbose:
            print("re-dissected %d frames with Decode As for UDP source ports %s"
                  % (sum(len(v) for v in redo.values()), ",".join(sorted(redo, key=int))))

    mism = []
    roce_decoded = 0
    notes = {}

    def bad(i, msg):
        mism.append("frame index %d (frame.number %d): %s" % (i, i + 1, msg))

    seen = set()
    for o in objs:
        i = o.get("index")
        if not isinstance(i, int):
            mism.append("JSON object without integer index: %r" % (o,))
            continue
        if i in seen:
            mism.append("duplicate index %d in JSON" % i)
        seen.add(i)
        if i < 0 or i >= n:
            mism.append("JSON index %d outside the pcap (%d frames)" % (i, n))
            continue
        row = rows[i]
        tag = " [%s]" % o["corruption"] if o.get("corruption") not in (None, "none") else ""
        if "vlan" in o and bool(o["vlan"]) != (row["vlan.id"] != ""):
            bad(i, "vlan: JSON %s, tshark %s%s" % (o["vlan"], row["vlan.id"] != "", tag))
        if o.get("ipver") is not None:
            tv = 6 if row["ipv6.src"] else (4 if row["ip.src"] else None)
            if tv != o["ipver"]:
                bad(i, "ipver: JSON %s, tshark %s%s" % (o["ipver"], tv, tag))
        # checksum status: 0 bad, 1 good, 2 unverified, 3 not present (UDP checksum 0 over IPv4)
        if o.get("ipv4_csum_ok") is not None and row["ip.checksum.status"] != ("1" if o["ipv4_csum_ok"] else "0"):
            bad(i, "ipv4_csum_ok: JSON %s, tshark ip.checksum.status %r%s" % (o["ipv4_csum_ok"], row["ip.checksum.status"], tag))
        if o.get("udp_csum_ok") is not None:
            ok = row["udp.checksum.status"] in ("1", "3")
            if ok != bool(o["udp_csum_ok"]):
                bad(i, "udp_csum_ok: JSON %s, tshark udp.checksum.status %r%s" % (o["udp_csum_ok"], row["udp.checksum.status"], tag))
        if not is_roce_json(o):
            if is_ib(row):
                if row["udp.dstport"] == "4791":
                    bad(i, "JSON says non-RoCE, tshark decodes a RoCEv2 BTH on UDP dport 4791")
                else:
                    k = o.get("kind", "?")
                    notes[k] = notes.get(k, 0) + 1
            continue
        if not is_ib(row):
            bad(i, "not decoded as InfiniBand by tshark (protocol column %r)%s" % (row["_ws.col.Protocol"], tag))
            continue
        roce_decoded += 1
        for key, field in (("opcode", "infiniband.bth.opcode"), ("dqpn", "infiniband.bth.destqp"),
                           ("psn", "infiniband.bth.psn")):
            if o.get(key) is not None and num(row[field]) != o[key]:
                bad(i, "%s: JSON %d (0x%x), tshark %s%s" % (key, o[key], o[key], row[field], tag))
        for key, (field, conv) in EXT_CHECKS.items():
            if o.get(key) is None:
                continue
            if row[field] == "":
                bad(i, "%s: JSON %d (0x%x), tshark has no %s%s" % (key, o[key], o[key], field, tag))
            elif conv(row[field]) != o[key]:
                bad(i, "%s: JSON %d (0x%x), tshark %s = %s%s" % (key, o[key], o[key], field, row[field], tag))
        tcrc = row["infiniband.invariant.crc"]
        want = []
        if o.get("icrc") is not None and o.get("icrc_ok", True):
            want.append(("icrc", int(o["icrc"], 16)))
        if o.get("trailer") is not None:
            want.append(("trailer", int(o["trailer"], 16)))
        for key, v in want:
            if tcrc == "":
                bad(i, "%s: tshark shows no Invariant CRC (expert: %s)%s" % (key, row["_ws.expert.message"] or "-", tag))
            elif num(tcrc) != bswap32(v):
                bad(i, "%s: JSON 0x%08x (LE), expected tshark Invariant CRC 0x%08x, tshark %s%s"
                    % (key, v, bswap32(v), tcrc, tag))

    if mism:
        print("MISMATCHES (first %d of %d):" % (min(a.max_report, len(mism)), len(mism)), file=sys.stderr)
        for m in mism[:a.max_report]:
            print("  " + m, file=sys.stderr)
    if notes and a.verbose:
        print("note: non-RoCEv2 frames that tshark still decodes as InfiniBand (expected; kinds): %s"
              % ", ".join("%s x%d" % kv for kv in sorted(notes.items())))
    print("tshark: %d frames, %d roce decoded, %d mismatches" % (n, roce_decoded, len(mism)))
    sys.exit(1 if mism else 0)


if __name__ == "__main__":
    main()
