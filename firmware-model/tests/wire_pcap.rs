//! Known-answer tests of `roce_model::wire` against real Soft-RoCE (rxe) captures in
//! `tests/vectors/rxe/` (classic pcap, Ethernet linktype, no FCS; its README says how each
//! was made).
//!
//! For every capture: every frame (ARP, TCP, IPv6 ND/MLD, RoCE) parses; every UDP/4791
//! frame is RoCEv2 with the opcode mix the vectors' README states; its ICRC (computed here
//! independently with crc32fast) equals `RocePacket::icrc()`; and `FrameBuilder` re-creates
//! the frame byte for byte (except the ICRC slot, which the builder leaves zero). For the
//! `rxevm_*` captures, QPNs, first PSNs, R_Keys and VAs match the tools' printed output.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use roce_model::wire::*;

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/rxe")
}

/// Reads the frames of a classic pcap file (either byte order, µs or ns timestamps).
fn read_pcap(bytes: &[u8]) -> Vec<&[u8]> {
    let magic = bytes.get(..4).expect("pcap too short");
    let le = match magic {
        [0xD4, 0xC3, 0xB2, 0xA1] | [0x4D, 0x3C, 0xB2, 0xA1] => true,
        [0xA1, 0xB2, 0xC3, 0xD4] | [0xA1, 0xB2, 0x3C, 0x4D] => false,
        _ => panic!("not a classic pcap file: magic {magic:02x?}"),
    };
    let u32_at = |off: usize| -> u32 {
        let b: [u8; 4] = bytes[off..off + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    assert_eq!(u32_at(20), 1, "linktype must be Ethernet");
    let mut frames = Vec::new();
    let mut off = 24;
    while off < bytes.len() {
        let incl = u32_at(off + 8) as usize;
        let orig = u32_at(off + 12) as usize;
        assert_eq!(incl, orig, "truncated capture record");
        frames.push(&bytes[off + 16..off + 16 + incl]);
        off += 16 + incl;
    }
    assert_eq!(off, bytes.len());
    frames
}

/// The RoCEv2 invariant CRC, computed independently of the codec's offsets: 8 × 0xFF,
/// then the IP header with the variant fields set to ones, UDP with checksum 0xFFFF, BTH
/// with the FECN/BECN/resv6 byte 0xFF, and the rest up to the ICRC.
fn icrc(frame: &[u8]) -> u32 {
    let ip = 14;
    let mut data = vec![0xFF; 8];
    let (ip_hdr_len, udp) = match frame[12..14] {
        [0x08, 0x00] => (usize::from(frame[ip] & 0x0F) * 4, ip + usize::from(frame[ip] & 0x0F) * 4),
        [0x86, 0xDD] => (40, ip + 40),
        _ => panic!("not IP"),
    };
    let end = udp + usize::from(u16::from_be_bytes([frame[udp + 4], frame[udp + 5]]));
    let mut pkt = frame[ip..end - 4].to_vec();
    if ip_hdr_len == 40 {
        pkt[0] |= 0x0F;
        pkt[1] = 0xFF;
        pkt[2] = 0xFF;
        pkt[3] = 0xFF;
        pkt[7] = 0xFF;
    } else {
        pkt[1] = 0xFF;
        pkt[8] = 0xFF;
        pkt[10] = 0xFF;
        pkt[11] = 0xFF;
    }
    let u = ip_hdr_len;
    pkt[u + 6] = 0xFF;
    pkt[u + 7] = 0xFF;
    pkt[u + 8 + 4] = 0xFF;
    data.extend_from_slice(&pkt);
    crc32fast::hash(&data)
}

/// What the tools printed about one side: its IP and its local QPN, PSN, RKey, VAddr.
#[derive(Debug, Clone, Copy)]
struct Side {
    ip: Ipv4Addr,
    qpn: u32,
    psn: u32,
    rkey: Option<u32>,
    va: Option<u64>,
}

fn hex_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.trim_start_matches([' ', ':']).trim_start_matches("0x");
    let hex: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&hex, 16).ok()
}

/// Parses the "local address" lines of ibv_rc_pingpong and perftest output.
fn parse_tool_output(text: &str) -> Vec<Side> {
    let lines: Vec<&str> = text.lines().collect();
    let mut sides = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.contains("local address") {
            continue;
        }
        let qpn = hex_after(line, "QPN").expect("QPN") as u32;
        let psn = hex_after(line, "PSN").expect("PSN") as u32;
        let rkey = hex_after(line, "RKey").map(|v| v as u32);
        let va = hex_after(line, "VAddr");
        let ip = if let Some(p) = line.find("::ffff:") {
            line[p + 7..].trim().parse().expect("GID ip")
        } else {
            // perftest: "GID: 00:00:...:255:255:192:00:02:01" on the next line.
            let gid = lines[i + 1].trim().trim_start_matches("GID:").trim();
            let parts: Vec<u8> = gid.split(':').map(|p| p.parse().expect("GID")).collect();
            let n = parts.len();
            Ipv4Addr::new(parts[n - 4], parts[n - 3], parts[n - 2], parts[n - 1])
        };
        sides.push(Side { ip, qpn, psn, rkey, va });
    }
    sides
}

struct Capture {
    name: &'static str,
    counts: &'static [(Opcode, usize)],
    /// Message size of the test (payload bytes per message).
    msg_size: usize,
}

const CAPTURES: &[Capture] = &[
    Capture {
        name: "rc_pingpong_send_1000B",
        counts: &[(Opcode::RcSendOnly, 40), (Opcode::RcAcknowledge, 40)],
        msg_size: 1000,
    },
    Capture {
        name: "ib_write_bw_3000B_mtu1024",
        counts: &[
            (Opcode::RcRdmaWriteFirst, 20),
            (Opcode::RcRdmaWriteMiddle, 20),
            (Opcode::RcRdmaWriteLast, 20),
            (Opcode::RcAcknowledge, 20),
        ],
        msg_size: 3000,
    },
    Capture {
        name: "ib_read_bw_5000B_mtu1024",
        counts: &[
            (Opcode::RcRdmaReadRequest, 20),
            (Opcode::RcRdmaReadResponseFirst, 20),
            (Opcode::RcRdmaReadResponseMiddle, 60),
            (Opcode::RcRdmaReadResponseLast, 20),
        ],
        msg_size: 5000,
    },
    Capture {
        name: "rxevm_rc_pingpong_send64_n5",
        counts: &[(Opcode::RcSendOnly, 10), (Opcode::RcAcknowledge, 10)],
        msg_size: 64,
    },
    Capture {
        name: "rxevm_ib_write_bw_2500B_n5",
        counts: &[
            (Opcode::RcRdmaWriteFirst, 5),
            (Opcode::RcRdmaWriteMiddle, 5),
            (Opcode::RcRdmaWriteLast, 5),
            (Opcode::RcAcknowledge, 5),
        ],
        msg_size: 2500,
    },
    Capture {
        name: "rxevm_ib_read_bw_2500B_n5",
        counts: &[
            (Opcode::RcRdmaReadRequest, 5),
            (Opcode::RcRdmaReadResponseFirst, 5),
            (Opcode::RcRdmaReadResponseMiddle, 5),
            (Opcode::RcRdmaReadResponseLast, 5),
        ],
        msg_size: 2500,
    },
];

#[test]
fn rxe_captures_parse_and_match_known_answers() {
    let dir = vectors_dir();
    for cap in CAPTURES {
        let path = dir.join(format!("{}.pcap", cap.name));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check_capture(cap, &bytes, &dir);
    }
}

fn check_capture(cap: &Capture, bytes: &[u8], dir: &Path) {
    let frames = read_pcap(bytes);
    let sides = std::fs::read_to_string(dir.join(format!("{}.tool-output.txt", cap.name)))
        .map(|t| parse_tool_output(&t))
        .unwrap_or_default();
    let side_of = |ip: Ipv4Addr| sides.iter().find(|s| s.ip == ip).copied();

    let mut counts: BTreeMap<Opcode, usize> = BTreeMap::new();
    let mut first_req_psn: BTreeMap<Ipv4Addr, u32> = BTreeMap::new();
    let mut msg_bytes: BTreeMap<Ipv4Addr, usize> = BTreeMap::new();
    let mut msns: Vec<u32> = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let ctx = format!("{} frame {}", cap.name, i + 1);
        let f = parse_frame(frame).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let Some(r) = f.roce() else {
            assert_ne!(f.udp().map(|u| u.dst_port()), Some(ROCEV2_UDP_PORT), "{ctx}");
            continue;
        };
        *counts.entry(r.opcode()).or_default() += 1;

        // Independent ICRC over the frame bytes; checks icrc() byte order and offsets.
        assert_eq!(r.icrc(), icrc(frame), "{ctx}: ICRC");
        assert_eq!(f.icrc_offset(), Some(frame.len() - 4), "{ctx}");
        assert!(f.eth_padding().is_empty(), "{ctx}");
        let ip = f.ipv4().expect("rxe captures are IPv4");
        assert!(ip.checksum_ok(), "{ctx}");
        assert_eq!(f.udp().unwrap().checksum(), 0, "{ctx}");
        let bth = r.bth();
        assert_eq!(bth.tver(), 0);
        assert_eq!(bth.pkey(), DEFAULT_PKEY, "{ctx}");
        assert_eq!(r.pad().len(), usize::from(bth.pad_count()));

        // The builder re-creates the frame exactly, except the ICRC slot.
        let b = FrameBuilder::from_frame(&f).expect("from_frame");
        let rebuilt = b.build(r.payload()).unwrap();
        assert_eq!(rebuilt.len(), frame.len(), "{ctx}");
        let n = frame.len() - 4;
        assert_eq!(&rebuilt[..n], &frame[..n], "{ctx}: rebuilt frame differs");
        assert_eq!(&rebuilt[n..], &[0; 4]);

        // Against the tools' printed QP parameters.
        let (src, dst) = (side_of(ip.src()), side_of(ip.dst()));
        if let (Some(src), Some(dst)) = (src, dst) {
            assert_eq!(bth.dest_qp(), dst.qpn, "{ctx}: DestQP");
            if r.opcode().is_request() {
                let first = *first_req_psn.entry(src.ip).or_insert(bth.psn());
                assert_eq!(first, src.psn, "{ctx}: first request PSN");
                let delta = bth.psn().wrapping_sub(src.psn) & MAX_U24;
                assert!(delta < 1000, "{ctx}: PSN {:#x} far from {:#x}", bth.psn(), src.psn);
            } else {
                // Responses carry the requester's PSNs.
                let delta = bth.psn().wrapping_sub(dst.psn) & MAX_U24;
                assert!(delta < 1000, "{ctx}: response PSN {:#x}", bth.psn());
            }
            if let Some(reth) = r.reth() {
                // The requester targets the responder's buffer.
                assert_eq!(Some(reth.rkey()), dst.rkey, "{ctx}: RKey");
                assert_eq!(Some(reth.va()), dst.va, "{ctx}: VA");
                assert_eq!(reth.dma_len() as usize, cap.msg_size, "{ctx}");
            }
        }
        if let Some(aeth) = r.aeth() {
            assert_eq!(aeth.syndrome_kind(), AethSyndrome::Ack { credit: 31 }, "{ctx}");
            if r.opcode().is_ack() || r.opcode().position().is_end() {
                msns.push(aeth.msn());
            }
        }

        // Message sizes: payloads of each message add up to the test's message size.
        let sender = ip.src();
        if r.opcode().has_payload() {
            let acc = msg_bytes.entry(sender).or_default();
            if r.opcode().position().is_start() {
                assert_eq!(*acc, 0, "{ctx}: message starts inside another");
            }
            *acc += r.payload().len();
            if r.opcode().position().is_end() {
                assert_eq!(*acc, cap.msg_size, "{ctx}: message size");
                *acc = 0;
            }
        }
    }
    let want: BTreeMap<Opcode, usize> = cap.counts.iter().copied().collect();
    assert_eq!(counts, want, "{}: opcode counts", cap.name);
    assert!(!msns.is_empty());
    if cap.name.starts_with("rxevm_") {
        assert_eq!(sides.len(), 2, "{}: tool output", cap.name);
        assert_eq!(first_req_psn.len(), if cap.name.contains("pingpong") { 2 } else { 1 });
    }
}

#[test]
fn tool_output_parser() {
    let perftest = " local address: LID 0000 QPN 0x0011 PSN 0xb0b7b2 OUT 0x80 RKey 0x0002f6 VAddr 0x00563462054000\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:00:02:01\n";
    let s = parse_tool_output(perftest);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].qpn, 0x11);
    assert_eq!(s[0].psn, 0xB0B7B2);
    assert_eq!(s[0].rkey, Some(0x2F6));
    assert_eq!(s[0].va, Some(0x5634_6205_4000));
    assert_eq!(s[0].ip, Ipv4Addr::new(192, 0, 2, 1));
    let pingpong = "  local address:  LID 0x0000, QPN 0x000011, PSN 0xf4453a, GID ::ffff:192.0.2.1\n";
    let s = parse_tool_output(pingpong);
    assert_eq!(s[0].psn, 0xF4453A);
    assert_eq!(s[0].rkey, None);
    assert_eq!(s[0].ip, Ipv4Addr::new(192, 0, 2, 1));
}
