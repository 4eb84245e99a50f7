#!/usr/bin/env python3
"""Independent RoCEv2 ICRC test vectors, built with scapy's own RoCE support.

The ICRC of every packet is computed by scapy (``scapy.contrib.roce.BTH``
fills it in ``raw()``); this script never computes an ICRC itself, except in
``--self-check``, which recomputes every ICRC with ``zlib.crc32`` over the
masked pseudo-header of the RoCEv2 specification (Annex A17) and fails
(exit 1) if that disagrees with scapy.

Usage:
  gen_scapy_vectors.py [--count N] [--seed S] --out-pcap FILE --out-json FILE
                       [--self-check] [--quiet]

See tests/oracle/README.md for the frame mix and the JSON schema.
Requires only ``pip install scapy`` (tested with scapy 2.8.0, Python 3.11).
"""

import argparse
import json
import random
import struct
import sys
import time
import zlib

from scapy.compat import raw
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.layers.dns import DNS, DNSQR
from scapy.packet import Raw
from scapy.contrib.roce import AETH, BTH, GRH

ROCE_PORT = 4791
MAX_FRAME = 9018          # jumbo frame limit (no FCS in the pcap)
ETH_MIN = 60              # minimum Ethernet frame without FCS; short frames are zero-padded

# RC opcodes exercised (0x15 is reserved in RC).
OPCODES = list(range(0x00, 0x15)) + [0x16, 0x17]

# Extension headers in wire order, per RC opcode (IBTA Vol 1 table 38 / rxe_opcode.c).
EXT_HDRS = {
    0x00: [], 0x01: [], 0x02: [], 0x03: ["ImmDt"], 0x04: [], 0x05: ["ImmDt"],
    0x06: ["RETH"], 0x07: [], 0x08: [], 0x09: ["ImmDt"], 0x0A: ["RETH"],
    0x0B: ["RETH", "ImmDt"], 0x0C: ["RETH"], 0x0D: ["AETH"], 0x0E: [],
    0x0F: ["AETH"], 0x10: ["AETH"], 0x11: ["AETH"], 0x12: ["AETH", "AtomicAckETH"],
    0x13: ["AtomicETH"], 0x14: ["AtomicETH"], 0x16: ["IETH"], 0x17: ["IETH"],
}
EXT_SIZE = {"RETH": 16, "AETH": 4, "ImmDt": 4, "IETH": 4, "AtomicETH": 28, "AtomicAckETH": 8}
NO_PAYLOAD = {0x0C, 0x11, 0x12, 0x13, 0x14}

PCAP_TS_BASE = 1_700_000_000  # fixed timestamps: the pcap is byte-for-byte reproducible


# --------------------------------------------------------------------------- helpers

def be16(b, o):
    return (b[o] << 8) | b[o + 1]


def be_int(b):
    return int.from_bytes(b, "big")


def rand_mac(rng):
    b = bytearray(rng.randbytes(6))
    b[0] &= 0xFE  # unicast
    return ":".join("%02x" % x for x in b)


def rand_ipv4(rng):
    while True:
        a = rng.randrange(1, 224)
        if a not in (10, 127):
            break
    return "%d.%d.%d.%d" % (a, rng.randrange(256), rng.randrange(256), rng.randrange(1, 255))


def rand_ipv6(rng):
    v = (0x2 << 125) | rng.getrandbits(125)  # 2000::/3 global unicast
    h = "%032x" % v
    return ":".join(h[i:i + 4] for i in range(0, 32, 4))


def locate(frame):
    """Byte-level parse of an Ethernet frame (no scapy). Returns a dict of
    offsets, or None if it is not IPv4/IPv6 + UDP."""
    off = 12
    et = be16(frame, off)
    vlan = False
    if et == 0x8100:
        vlan = True
        off += 4
        et = be16(frame, off)
    l3 = off + 2
    if et == 0x0800:
        ihl = (frame[l3] & 0x0F) * 4
        end = l3 + be16(frame, l3 + 2)
        if frame[l3 + 9] != 17:
            return None
        l4 = l3 + ihl
        ipver = 4
    elif et == 0x86DD:
        end = l3 + 40 + be16(frame, l3 + 4)
        if frame[l3 + 6] != 17:
            return None
        l4 = l3 + 40
        ipver = 6
    else:
        return None
    return {"vlan": vlan, "l3": l3, "l4": l4, "bth": l4 + 8, "end": end, "ipver": ipver,
            "dport": be16(frame, l4 + 2)}


def independent_icrc(frame):
    """ICRC per rocev2-notes.md, with zlib.crc32 only (independent of scapy).
    Returns (computed, trailer) as ints; the trailer is read little-endian."""
    loc = locate(frame)
    l3, l4, bth, end = loc["l3"], loc["l4"], loc["bth"], loc["end"]
    ip = bytearray(frame[l3:l4])
    if loc["ipver"] == 4:
        ip[1] = 0xFF                  # TOS (DSCP+ECN)
        ip[8] = 0xFF                  # TTL
        ip[10:12] = b"\xff\xff"       # header checksum
    else:
        ip[0] |= 0x0F                 # traffic class, high nibble
        ip[1] = 0xFF                  # traffic class low nibble + flow label high nibble
        ip[2:4] = b"\xff\xff"         # flow label
        ip[7] = 0xFF                  # hop limit
    udp = bytearray(frame[l4:bth])
    udp[6:8] = b"\xff\xff"            # UDP checksum
    bthb = bytearray(frame[bth:bth + 12])
    bthb[4] = 0xFF                    # FECN, BECN, resv6
    data = b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bthb) + bytes(frame[bth + 12:end - 4])
    return zlib.crc32(data) & 0xFFFFFFFF, int.from_bytes(frame[end - 4:end], "little")


def scapy_icrc(frame):
    """What scapy computes as the ICRC for these bytes (re-dissected), and the
    trailer. The frame is cut at the end of the IP datagram first: scapy's
    BTH.compute_icrc() on a dissected frame that carries Ethernet padding would
    include the padding bytes (see README)."""
    loc = locate(frame)
    p = Ether(bytes(frame[:loc["end"]]))
    return (int.from_bytes(p[BTH].compute_icrc(b""), "little"),
            int.from_bytes(frame[loc["end"] - 4:loc["end"]], "little"))


def fix_checksums(frame, fix_ip=True, fix_udp=True):
    """Let scapy recompute the IPv4 header checksum and (for IPv6) the UDP
    checksum of a (modified) frame, keeping the ICRC trailer as is. IPv4 UDP
    checksum stays 0. Asserts that nothing but the checksum bytes changed."""
    p = Ether(bytes(frame))
    loc = locate(frame)
    if loc["ipver"] == 4 and fix_ip:
        del p[IP].chksum
    if loc["ipver"] == 6 and fix_udp:
        del p[UDP].chksum
    out = bytearray(raw(p))
    assert len(out) == len(frame)
    allowed = set()
    if loc["ipver"] == 4:
        allowed |= {loc["l3"] + 10, loc["l3"] + 11}
    else:
        allowed |= {loc["l4"] + 6, loc["l4"] + 7}
    diff = [i for i in range(len(out)) if out[i] != frame[i]]
    assert all(i in allowed for i in diff), diff
    return out


# --------------------------------------------------------------------------- RoCE packets

def build_roce(rng, opcode):
    """One valid RoCEv2 RC frame. Returns (frame bytearray, meta dict)."""
    ipver = 4 if rng.random() < 0.5 else 6
    vlan = rng.random() < 0.25
    exts = EXT_HDRS[opcode]
    if opcode in NO_PAYLOAD:
        plen = 0
    elif rng.random() < 0.15:
        plen = rng.randrange(0, 17)          # bias towards tiny payloads / all pad counts
    else:
        plen = rng.randrange(0, 4097)
    pad = (-plen) % 4
    payload = rng.randbytes(plen) + b"\x00" * pad

    meta = {}
    ext_raw = b""
    aeth = None
    for h in exts:
        if h == "AETH":
            syn, msn = rng.randrange(256), rng.getrandbits(24)
            aeth = AETH(syndrome=syn, msn=msn)   # scapy's own AETH layer
            meta["aeth_syndrome"], meta["aeth_msn"] = syn, msn
            continue
        b = rng.randbytes(EXT_SIZE[h])
        ext_raw += b
        if h == "RETH":
            meta["reth_va"], meta["reth_rkey"], meta["reth_len"] = \
                be_int(b[0:8]), be_int(b[8:12]), be_int(b[12:16])
        elif h == "ImmDt":
            meta["immdt"] = be_int(b)
        elif h == "IETH":
            meta["ieth_rkey"] = be_int(b)
        elif h == "AtomicETH":
            meta["atomic_va"], meta["atomic_rkey"] = be_int(b[0:8]), be_int(b[8:12])
            meta["atomic_swap"], meta["atomic_cmp"] = be_int(b[12:20]), be_int(b[20:28])
        elif h == "AtomicAckETH":
            meta["atomic_orig"] = be_int(b)

    bth = BTH(opcode=opcode, solicited=rng.getrandbits(1), migreq=rng.getrandbits(1),
              padcount=pad, version=0, pkey=rng.getrandbits(16),
              fecn=rng.getrandbits(1), becn=rng.getrandbits(1), resv6=rng.getrandbits(6),
              dqpn=rng.getrandbits(24), ackreq=rng.getrandbits(1), resv7=rng.getrandbits(7),
              psn=rng.getrandbits(24))
    l2 = Ether(src=rand_mac(rng), dst=rand_mac(rng))
    if vlan:
        l2 = l2 / Dot1Q(prio=rng.randrange(8), id=rng.getrandbits(1), vlan=rng.randrange(1, 4095))
    sport = rng.randrange(1, 65536)
    if ipver == 4:
        l3 = IP(src=rand_ipv4(rng), dst=rand_ipv4(rng), tos=rng.getrandbits(8),
                ttl=rng.randrange(1, 256), id=rng.getrandbits(16), flags=rng.choice([0, 2]))
        l4 = UDP(sport=sport, dport=ROCE_PORT, chksum=0)
    else:
        l3 = IPv6(src=rand_ipv6(rng), dst=rand_ipv6(rng), tc=rng.getrandbits(8),
                  fl=rng.getrandbits(20), hlim=rng.randrange(1, 256))
        l4 = UDP(sport=sport, dport=ROCE_PORT)   # scapy computes the (mandatory) checksum
    pkt = l2 / l3 / l4 / bth
    if aeth is not None:
        pkt = pkt / aeth
    if ext_raw or payload:
        pkt = pkt / Raw(ext_raw + payload)   # ext headers scapy lacks, then payload + pad
    frame = bytearray(raw(pkt))               # scapy fills the ICRC here
    if len(frame) < ETH_MIN:
        frame += b"\x00" * (ETH_MIN - len(frame))
    assert len(frame) <= MAX_FRAME

    loc = locate(frame)
    ext_len = sum(EXT_SIZE[h] for h in exts)
    meta.update({"ipver": ipver, "vlan": vlan, "payload_len": plen, "padcount": pad,
                 "ext_hdrs": exts, "ext_len": ext_len})
    assert loc["end"] - loc["bth"] == 12 + ext_len + plen + pad + 4
    return frame, meta


def describe(frame, meta):
    """JSON fields that describe what is actually in the frame (re-read from its bytes)."""
    loc = locate(frame)
    b = loc["bth"]
    d = {
        "opcode": frame[b],
        "dqpn": be_int(frame[b + 5:b + 8]),
        "psn": be_int(frame[b + 9:b + 12]),
        "ipver": loc["ipver"],
        "vlan": loc["vlan"],
        "frame_len": len(frame),
        "l3_off": loc["l3"],
        "bth_off": b,
        "icrc_off": loc["end"] - 4,
        "eth_pad": len(frame) - loc["end"],
        "payload_len": meta["payload_len"],
        "padcount": (frame[b + 1] >> 4) & 3,
        "trailer": "0x%08x" % int.from_bytes(frame[loc["end"] - 4:loc["end"]], "little"),
    }
    o = b + 12
    for h in meta["ext_hdrs"]:
        x = frame[o:o + EXT_SIZE[h]]
        if h == "RETH":
            d["reth_va"], d["reth_rkey"], d["reth_len"] = be_int(x[0:8]), be_int(x[8:12]), be_int(x[12:16])
        elif h == "AETH":
            d["aeth_syndrome"], d["aeth_msn"] = x[0], be_int(x[1:4])
        elif h == "ImmDt":
            d["immdt"] = be_int(x)
        elif h == "IETH":
            d["ieth_rkey"] = be_int(x)
        elif h == "AtomicETH":
            d["atomic_va"], d["atomic_rkey"] = be_int(x[0:8]), be_int(x[8:12])
            d["atomic_swap"], d["atomic_cmp"] = be_int(x[12:20]), be_int(x[20:28])
        elif h == "AtomicAckETH":
            d["atomic_orig"] = be_int(x)
        o += EXT_SIZE[h]
    return d


def covered_targets(frame, meta):
    """(label, [byte offsets], xor-mask chooser) for bytes covered by the ICRC that can be
    changed without making the frame unparseable (lengths, ethertype, IP version/protocol,
    UDP dport and the BTH opcode/TVer/PadCnt are left alone)."""
    loc = locate(frame)
    l3, l4, b = loc["l3"], loc["l4"], loc["bth"]
    anyx = lambda rng: rng.randrange(1, 256)
    t = []
    if loc["ipver"] == 4:
        t.append(("ipv4_id", [l3 + 4, l3 + 5], anyx))
        t.append(("ipv4_src", list(range(l3 + 12, l3 + 16)), anyx))
        t.append(("ipv4_dst", list(range(l3 + 16, l3 + 20)), anyx))
    else:
        t.append(("ipv6_src", list(range(l3 + 8, l3 + 24)), anyx))
        t.append(("ipv6_dst", list(range(l3 + 24, l3 + 40)), anyx))
    t.append(("udp_sport", [l4, l4 + 1], anyx))
    t.append(("bth_se_m", [b + 1], lambda rng: rng.choice([0x80, 0x40, 0xC0])))
    t.append(("bth_pkey", [b + 2, b + 3], anyx))
    t.append(("bth_dqpn", [b + 5, b + 6, b + 7], anyx))
    t.append(("bth_ackreq_resv7", [b + 8], anyx))
    t.append(("bth_psn", [b + 9, b + 10, b + 11], anyx))
    o = b + 12
    for h in meta["ext_hdrs"]:
        t.append((h.lower(), list(range(o, o + EXT_SIZE[h])), anyx))
        o += EXT_SIZE[h]
    if meta["payload_len"]:
        t.append(("payload", list(range(o, o + meta["payload_len"])), anyx))
    if meta["padcount"]:
        t.append(("pad", list(range(o + meta["payload_len"], o + meta["payload_len"] + meta["padcount"])), anyx))
    t.append(("ICRC", list(range(loc["end"] - 4, loc["end"])), anyx))
    return t


def make_covered(rng, frame, meta):
    label, offs, mask = rng.choice(covered_targets(frame, meta))
    f = bytearray(frame)
    f[rng.choice(offs)] ^= mask(rng)
    f = fix_checksums(f)  # only the ICRC may detect the change
    return f, ("icrc" if label == "ICRC" else "covered:" + label), True, True


def make_masked(rng, frame, meta):
    """Change only an ICRC-masked field; the ICRC must stay valid."""
    loc = locate(frame)
    l3, l4, b = loc["l3"], loc["l4"], loc["bth"]
    f = bytearray(frame)
    ip_ok = udp_ok = True
    if loc["ipver"] == 4:
        choices = ["ipv4_tos", "ipv4_ttl", "ipv4_chksum", "udp_chksum", "bth_fecn", "bth_becn", "bth_resv6"]
    else:
        choices = ["ipv6_tc", "ipv6_fl", "ipv6_hlim", "udp_chksum", "bth_fecn", "bth_becn", "bth_resv6"]
    what = rng.choice(choices)
    if what == "ipv4_tos":
        f[l3 + 1] ^= rng.randrange(1, 256)
    elif what == "ipv4_ttl":
        f[l3 + 8] ^= rng.randrange(1, 256)
    elif what == "ipv4_chksum":
        f[l3 + 10 + rng.randrange(2)] ^= rng.randrange(1, 256)
        ip_ok = False  # deliberately wrong IPv4 header checksum
    elif what == "udp_chksum":
        f[l4 + 6 + rng.randrange(2)] ^= rng.randrange(1, 256)
        udp_ok = False  # IPv4: non-zero wrong checksum; IPv6: wrong checksum
    elif what == "ipv6_tc":
        w = be_int(f[l3:l3 + 4])
        w ^= rng.randrange(1, 256) << 20
        f[l3:l3 + 4] = w.to_bytes(4, "big")
    elif what == "ipv6_fl":
        w = be_int(f[l3:l3 + 4])
        w ^= rng.randrange(1, 1 << 20)
        f[l3:l3 + 4] = w.to_bytes(4, "big")
    elif what == "ipv6_hlim":
        f[l3 + 7] ^= rng.randrange(1, 256)
    elif what == "bth_fecn":
        f[b + 4] ^= 0x80
    elif what == "bth_becn":
        f[b + 4] ^= 0x40
    elif what == "bth_resv6":
        f[b + 4] ^= rng.randrange(1, 64)
    if what not in ("ipv4_chksum", "udp_chksum"):
        f = fix_checksums(f)  # e.g. a router rewriting TTL/TOS also fixes the IPv4 checksum
    return f, "masked:" + what, ip_ok, udp_ok


# --------------------------------------------------------------------------- non-RoCE frames

NON_ROCE_KINDS = ["arp", "dns_udp53", "ipv6_udp4792", "tcp_18515", "udp_sport4791", "rocev1"]


def build_non_roce(rng, kind):
    src, dst = rand_mac(rng), rand_mac(rng)
    vlan = False
    if kind == "arp":
        p = Ether(src=src, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=src, psrc=rand_ipv4(rng), pdst=rand_ipv4(rng))
        ipver = None
    elif kind == "dns_udp53":
        p = Ether(src=src, dst=dst) / IP(src=rand_ipv4(rng), dst=rand_ipv4(rng)) / \
            UDP(sport=rng.randrange(1024, 65536), dport=53) / DNS(rd=1, qd=DNSQR(qname="example.org"))
        ipver = 4
    elif kind == "ipv6_udp4792":
        p = Ether(src=src, dst=dst) / IPv6(src=rand_ipv6(rng), dst=rand_ipv6(rng)) / \
            UDP(sport=rng.randrange(1024, 65536), dport=4792) / Raw(rng.randbytes(40))
        ipver = 6
    elif kind == "tcp_18515":
        vlan = True
        p = Ether(src=src, dst=dst) / Dot1Q(vlan=rng.randrange(1, 4095)) / \
            IP(src=rand_ipv4(rng), dst=rand_ipv4(rng)) / TCP(sport=rng.randrange(1024, 65536), dport=18515, flags="PA") / \
            Raw(b"0000:000011:e2abf0:00000000000000000000ffffc0000201".ljust(52, b"\x00"))
        ipver = 4
    elif kind == "udp_sport4791":
        # source port 4791 but destination port elsewhere: RoCEv2 is identified by the DESTINATION port
        p = Ether(src=src, dst=dst) / IP(src=rand_ipv4(rng), dst=rand_ipv4(rng)) / \
            UDP(sport=ROCE_PORT, dport=rng.randrange(1024, 4791), chksum=0) / Raw(rng.randbytes(32))
        ipver = 4
    elif kind == "rocev1":
        # RoCE v1 (ethertype 0x8915 + GRH): not RoCEv2, must be skipped by a RoCEv2-only parser
        p = Ether(src=src, dst=dst, type=0x8915) / GRH(nexthdr=0x1B, hoplmt=64, paylen=12 + 16 + 4,
                                                         sgid=rng.getrandbits(128), dgid=rng.getrandbits(128)) / \
            BTH(opcode=0x04, dqpn=rng.getrandbits(24), psn=rng.getrandbits(24), icrc=rng.getrandbits(32)) / \
            Raw(rng.randbytes(16))
        ipver = None
    else:
        raise ValueError(kind)
    f = bytearray(raw(p))
    if len(f) < ETH_MIN:
        f += b"\x00" * (ETH_MIN - len(f))
    return f, {"index": None, "roce": False, "icrc_ok": None, "icrc": None, "opcode": None, "dqpn": None,
               "psn": None, "ipver": ipver, "vlan": vlan, "corruption": "none", "kind": kind,
               "frame_len": len(f)}


# --------------------------------------------------------------------------- output

def write_pcap(path, frames):
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))  # LINKTYPE_ETHERNET
        for i, f in enumerate(frames):
            fh.write(struct.pack("<IIII", PCAP_TS_BASE + i // 1000, (i % 1000) * 1000, len(f), len(f)))
            fh.write(f)


def generate(count, seed, log):
    rng = random.Random(seed)
    frames, recs = [], []
    n_non = max(6, count // 300) if count >= 6 else 0
    non_at = set(rng.sample(range(count), n_non)) if n_non else set()
    non_k = 0
    for i in range(count):
        if i in non_at:
            f, rec = build_non_roce(rng, NON_ROCE_KINDS[non_k % len(NON_ROCE_KINDS)])
            non_k += 1
            rec["index"] = len(frames)
            frames.append(f)
            recs.append(rec)
        opcode = OPCODES[i % len(OPCODES)]
        frame, meta = build_roce(rng, opcode)
        icrc = "0x%08x" % int.from_bytes(frame[locate(frame)["end"] - 4:locate(frame)["end"]], "little")
        orig_index = len(frames)
        variants = [(frame, "none", True, True)]
        if rng.random() < 1 / 3:
            variants.append(make_covered(rng, frame, meta))
        if rng.random() < 1 / 6:
            variants.append(make_masked(rng, frame, meta))
        for f, corr, ip_ok, udp_ok in variants:
            valid = corr == "none" or corr.startswith("masked:")
            # scapy is the oracle for validity of every frame (originals and variants)
            s_calc, s_trail = scapy_icrc(f)
            if (s_calc == s_trail) != valid:
                raise SystemExit("FATAL: scapy says ICRC %s for frame %d (%s), expected %s"
                                 % ("valid" if s_calc == s_trail else "invalid", len(frames), corr,
                                    "valid" if valid else "invalid"))
            rec = {"index": len(frames), "roce": True, "icrc_ok": valid, "icrc": icrc}
            d = describe(f, meta)
            rec.update({k: d[k] for k in ("opcode", "dqpn", "psn", "ipver", "vlan")})
            rec["corruption"] = corr
            rec["kind"] = "rocev2"
            if corr != "none":
                rec["variant_of"] = orig_index
            rec.update(d)
            rec["ext_hdrs"] = meta["ext_hdrs"]
            rec["ipv4_csum_ok"] = ip_ok if d["ipver"] == 4 else None
            rec["udp_csum_ok"] = udp_ok
            frames.append(f)
            recs.append(rec)
    return frames, recs


def self_check(frames, recs, log):
    bad = []
    n_valid = n_invalid = 0
    for f, r in zip(frames, recs):
        if not r["roce"]:
            continue
        calc, trailer = independent_icrc(f)
        if r["icrc_ok"]:
            n_valid += 1
            if calc != trailer or calc != int(r["icrc"], 16):
                bad.append("frame %d (%s, IPv%d, opcode 0x%02x): zlib/notes ICRC 0x%08x, scapy trailer 0x%08x"
                           % (r["index"], r["corruption"], r["ipver"], r["opcode"], calc, trailer))
        else:
            n_invalid += 1
            if calc == trailer:
                bad.append("frame %d (%s): corrupted frame has a VALID ICRC per the notes" % (r["index"], r["corruption"]))
    if bad:
        print("SELF-CHECK FAILED: %d disagreements between scapy and the rocev2-notes.md ICRC:" % len(bad), file=sys.stderr)
        for b in bad[:30]:
            print("  " + b, file=sys.stderr)
        return False
    log("self-check OK: %d valid frames agree (scapy == zlib over masked pseudo-header), "
        "%d corrupted frames rejected by both" % (n_valid, n_invalid))
    return True


def verify_pcap(path, log):
    from scapy.utils import RawPcapReader
    n = n_roce = 0
    problems = []
    for i, (data, _meta) in enumerate(RawPcapReader(path)):
        n += 1
        f = bytearray(data)
        loc = locate(f) if len(f) >= 34 else None
        if loc is None or loc["dport"] != ROCE_PORT:
            continue
        n_roce += 1
        s_calc, trailer = scapy_icrc(f)
        z_calc, _ = independent_icrc(f)
        if s_calc != trailer or z_calc != trailer:
            problems.append("frame index %d: trailer 0x%08x, scapy 0x%08x, zlib/notes 0x%08x"
                            % (i, trailer, s_calc, z_calc))
    for p in problems[:30]:
        print("  " + p, file=sys.stderr)
    log("%s: %d frames, %d RoCEv2, %d with a bad/disagreeing ICRC" % (path, n, n_roce, len(problems)))
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=3000, help="number of valid RoCEv2 packets (default 3000)")
    ap.add_argument("--seed", type=int, default=1, help="RNG seed (default 1)")
    ap.add_argument("--out-pcap")
    ap.add_argument("--out-json")
    ap.add_argument("--verify-pcap", metavar="FILE",
                    help="instead of generating: check the ICRC of every RoCEv2 frame (UDP dport 4791) "
                         "of an existing pcap with scapy AND with the zlib/notes computation; exit 1 on any "
                         "bad or disagreeing frame")
    ap.add_argument("--self-check", action="store_true",
                    help="recompute every ICRC with zlib.crc32 per rocev2-notes.md; exit 1 on disagreement")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    log = (lambda *x: None) if a.quiet else (lambda *x: print(*x, file=sys.stderr))
    if a.verify_pcap:
        sys.exit(0 if verify_pcap(a.verify_pcap, log) else 1)
    if not a.out_pcap or not a.out_json:
        ap.error("--out-pcap and --out-json are required")
    t0 = time.time()
    frames, recs = generate(a.count, a.seed, log)
    t1 = time.time()
    write_pcap(a.out_pcap, frames)
    with open(a.out_json, "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(r, sort_keys=False) for r in recs) + "\n]\n")
    n_roce = sum(r["roce"] for r in recs)
    cnt = {}
    for r in recs:
        k = r["corruption"].split(":")[0]
        cnt[k] = cnt.get(k, 0) + 1
    log("wrote %d frames (%d RoCEv2: %d valid originals, %s; %d non-RoCE) to %s / %s in %.1f s"
        % (len(frames), n_roce, cnt.get("none", 0) - (len(recs) - n_roce),
           ", ".join("%d %s" % (v, k) for k, v in sorted(cnt.items()) if k != "none"),
           len(recs) - n_roce, a.out_pcap, a.out_json, t1 - t0))
    if a.self_check and not self_check(frames, recs, log):
        sys.exit(1)


if __name__ == "__main__":
    main()
