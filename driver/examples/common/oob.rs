//! The tools' out-of-band (TCP) exchanges, byte for byte: ibv_rc_pingpong's 52-byte
//! messages and perftest's Ethernet exchange. Adapted from `tests/src/rxevm.rs`
//! (`PingpongPeerInfo`, `PerftestDest`, `PerftestConn`), where they are checked against
//! captures of the real tools (rdma-core 44, perftest 4.5+0.17).

use std::fmt::Write as _;
use std::io::{Read, Write};

use super::Result;

// ---------------------------------------------------------------------------------------------
// ibv_rc_pingpong (rdma-core libibverbs/examples/rc_pingpong.c)

/// `sizeof "0000:000000:000000:00000000000000000000000000000000"`.
pub const PINGPONG_MSG_LEN: usize = 52;
/// `write(fd, "done", sizeof "done")`: 5 bytes with the NUL (also perftest's last message).
pub const DONE: &[u8; 5] = b"done\0";

/// One side's QP address as ibv_rc_pingpong exchanges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingpongDest {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// Initial PSN (24 bits).
    pub psn: u32,
    /// GID in wire order (all zero when the tool runs without `-g`).
    pub gid: [u8; 16],
}

impl PingpongDest {
    /// `sprintf(msg, "%04x:%06x:%06x:%s", lid, qpn, psn, wire_gid)`, NUL-padded to 52 bytes.
    pub fn encode(&self) -> [u8; PINGPONG_MSG_LEN] {
        let mut s = format!("{:04x}:{:06x}:{:06x}:", self.lid, self.qpn & 0xFF_FFFF, self.psn & 0xFF_FFFF);
        for b in self.gid {
            let _ = write!(s, "{b:02x}");
        }
        let mut m = [0u8; PINGPONG_MSG_LEN];
        m[..s.len()].copy_from_slice(s.as_bytes());
        m
    }

    /// Parse a 52-byte message (strict: field widths, hex digits, NUL padding).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        let bad = |why: &str| format!("bad ibv_rc_pingpong message {:?}: {why}", String::from_utf8_lossy(msg));
        if msg.len() != PINGPONG_MSG_LEN {
            return Err(bad("length").into());
        }
        let text_len = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        if msg[text_len..].iter().any(|&b| b != 0) {
            return Err(bad("bytes after the NUL").into());
        }
        let t = std::str::from_utf8(&msg[..text_len]).map_err(|_| bad("not ASCII"))?;
        let f: Vec<&str> = t.split(':').collect();
        if f.len() != 4 || f[0].len() != 4 || f[1].len() != 6 || f[2].len() != 6 || f[3].len() != 32 {
            return Err(bad("not LLLL:QQQQQQ:PPPPPP:<32 hex>").into());
        }
        let lid = hex(f[0]).ok_or_else(|| bad("LID"))? as u16;
        let qpn = hex(f[1]).ok_or_else(|| bad("QPN"))? as u32;
        let psn = hex(f[2]).ok_or_else(|| bad("PSN"))? as u32;
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = hex(&f[3][2 * i..2 * i + 2]).ok_or_else(|| bad("GID"))? as u8;
        }
        Ok(PingpongDest { lid, qpn, psn, gid })
    }
}

fn hex(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn read_exact<S: Read>(s: &mut S, buf: &mut [u8], what: &str) -> Result<()> {
    s.read_exact(buf).map_err(|e| format!("read {what}: {e}").into())
}

fn write_all<S: Write>(s: &mut S, buf: &[u8], what: &str) -> Result<()> {
    s.write_all(buf).and_then(|_| s.flush()).map_err(|e| format!("write {what}: {e}").into())
}

/// `pp_server_exch_dest`: read the client's message, `on_remote` (the tool moves its QP to
/// RTR/RTS here, before answering), write ours, read the client's `"done\0"`.
pub fn pingpong_server_exchange<S, F>(s: &mut S, mine: &PingpongDest, on_remote: F) -> Result<PingpongDest>
where
    S: Read + Write,
    F: FnOnce(&PingpongDest) -> Result<()>,
{
    let mut m = [0u8; PINGPONG_MSG_LEN];
    read_exact(s, &mut m, "the client's address")?;
    let theirs = PingpongDest::parse(&m)?;
    on_remote(&theirs)?;
    write_all(s, &mine.encode(), "our address")?;
    let mut d = [0u8; DONE.len()];
    read_exact(s, &mut d, "\"done\"")?;
    if &d != DONE {
        return Err(format!("expected \"done\\0\" from the client, got {:?}", String::from_utf8_lossy(&d)).into());
    }
    Ok(theirs)
}

/// `pp_client_exch_dest`: write ours, read the server's, write `"done\0"`.
pub fn pingpong_client_exchange<S: Read + Write>(s: &mut S, mine: &PingpongDest) -> Result<PingpongDest> {
    write_all(s, &mine.encode(), "our address")?;
    let mut m = [0u8; PINGPONG_MSG_LEN];
    read_exact(s, &mut m, "the server's address")?;
    let theirs = PingpongDest::parse(&m)?;
    write_all(s, DONE, "\"done\"")?;
    Ok(theirs)
}

// ---------------------------------------------------------------------------------------------
// perftest's Ethernet exchange (src/perftest_communication.c), without rdma_cm

/// `KEY_MSG_SIZE_GID`.
pub const PERFTEST_KEY_MSG_LEN: usize = 108;
/// `sizeof(user_param->version)`.
pub const PERFTEST_VERSION_LEN: usize = 16;
/// The version we announce: that of Debian's perftest 4.5+0.17 binaries, so the peer takes
/// the same code paths as between two of those (sys data, MTU check, 8-byte iteration counts).
pub const PERFTEST_VERSION: &str = "6.06";
/// Handshakes before the traffic with one QP (address exchange, after `ctx_connect`, after
/// moving to RTR).
pub const PERFTEST_PRE_TRAFFIC_HANDSHAKES: usize = 3;

/// perftest's `struct pingpong_dest` (`KEY_PRINT_FMT_GID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PerftestDest {
    /// LID.
    pub lid: u16,
    /// Outstanding RDMA READs this side accepts.
    pub out_reads: u16,
    /// QP number.
    pub qpn: u32,
    /// Initial PSN.
    pub psn: u32,
    /// R_Key of the buffer.
    pub rkey: u32,
    /// Address of the buffer.
    pub vaddr: u64,
    /// GID.
    pub gid: [u8; 16],
    /// SRQ number (0).
    pub srqn: u32,
}

impl PerftestDest {
    /// `"%04x:%04x:%06x:%06x:%08x:%016llx:"` + 16 × `"%02x:"` + `"%08x:"`, NUL, 108 bytes.
    pub fn encode(&self) -> [u8; PERFTEST_KEY_MSG_LEN] {
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid,
            self.out_reads,
            self.qpn & 0xFF_FFFF,
            self.psn & 0xFF_FFFF,
            self.rkey,
            self.vaddr
        );
        for b in self.gid {
            let _ = write!(s, "{b:02x}:");
        }
        let _ = write!(s, "{:08x}:", self.srqn);
        let mut m = [0u8; PERFTEST_KEY_MSG_LEN];
        let n = s.len().min(PERFTEST_KEY_MSG_LEN - 1);
        m[..n].copy_from_slice(&s.as_bytes()[..n]);
        m
    }

    /// Parse a 108-byte message (strict widths).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        let bad = |why: &str| format!("bad perftest key message {:?}: {why}", String::from_utf8_lossy(msg));
        if msg.len() != PERFTEST_KEY_MSG_LEN {
            return Err(bad("length").into());
        }
        let text_len = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        if msg[text_len..].iter().any(|&b| b != 0) {
            return Err(bad("bytes after the NUL").into());
        }
        let t = std::str::from_utf8(&msg[..text_len]).map_err(|_| bad("not ASCII"))?;
        let t = t.strip_suffix(':').ok_or_else(|| bad("no trailing ':'"))?;
        let f: Vec<&str> = t.split(':').collect();
        if f.len() != 6 + 16 + 1 {
            return Err(bad("field count").into());
        }
        for (i, w) in [4, 4, 6, 6, 8, 16].iter().enumerate() {
            if f[i].len() != *w {
                return Err(bad(&format!("field {i} width")).into());
            }
        }
        if f[6..22].iter().any(|g| g.len() != 2) || f[22].len() != 8 {
            return Err(bad("GID bytes or SRQN width").into());
        }
        let h = |i: usize| hex(f[i]).ok_or_else(|| bad(&format!("field {i} not hex")));
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = h(6 + i)? as u8;
        }
        Ok(PerftestDest {
            lid: h(0)? as u16,
            out_reads: h(1)? as u16,
            qpn: h(2)? as u32,
            psn: h(3)? as u32,
            rkey: h(4)? as u32,
            vaddr: h(5)?,
            gid,
            srqn: h(22)? as u32,
        })
    }
}

/// The 5 values of `xchg_bw_reports` (8 bytes each, big-endian; doubles as IEEE bits).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BwReport {
    /// Message size.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// Peak bandwidth, MB/s.
    pub bw_peak: f64,
    /// Average bandwidth, MB/s.
    pub bw_avg: f64,
    /// Average message rate, Mpps.
    pub msg_rate_avg: f64,
}

/// A perftest side channel. The client (the side given a server name) writes first in every
/// exchange; the server reads first.
pub struct PerftestConn<S: Read + Write> {
    /// The stream.
    pub stream: S,
    /// Whether we are the client.
    pub client: bool,
}

impl<S: Read + Write> PerftestConn<S> {
    /// `ctx_xchg_data_ethernet`.
    pub fn xchg(&mut self, mine: &[u8], what: &str) -> Result<Vec<u8>> {
        let mut theirs = vec![0u8; mine.len()];
        if self.client {
            write_all(&mut self.stream, mine, what)?;
            read_exact(&mut self.stream, &mut theirs, what)?;
        } else {
            read_exact(&mut self.stream, &mut theirs, what)?;
            write_all(&mut self.stream, mine, what)?;
        }
        Ok(theirs)
    }

    /// `exchange_versions`: 16 bytes, NUL-padded.
    pub fn exchange_versions(&mut self) -> Result<String> {
        let mut v = [0u8; PERFTEST_VERSION_LEN];
        v[..PERFTEST_VERSION.len()].copy_from_slice(PERFTEST_VERSION.as_bytes());
        let r = self.xchg(&v, "perftest version")?;
        let end = r.iter().position(|&b| b == 0).unwrap_or(r.len());
        Ok(String::from_utf8_lossy(&r[..end]).into_owned())
    }

    /// `check_sys_data`: cycle buffer, then cache line size (4-byte big-endian); the maxima.
    pub fn sys_data(&mut self, cycle_buffer: u32, cache_line: u32) -> Result<(u32, u32)> {
        let a = self.xchg(&cycle_buffer.to_be_bytes(), "perftest cycle buffer")?;
        let b = self.xchg(&cache_line.to_be_bytes(), "perftest cache line size")?;
        let ra = u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
        let rb = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Ok((ra.max(cycle_buffer), rb.max(cache_line)))
    }

    /// `check_mtu`: `"%d"` of the `ibv_mtu` enum in 2 bytes. Returns the peer's enum.
    pub fn mtu(&mut self, mtu_enum: u8) -> Result<u8> {
        let r = self.xchg(&[b'0' + mtu_enum, 0], "perftest mtu")?;
        match r[0] {
            b'1'..=b'5' if r[1] == 0 => Ok(r[0] - b'0'),
            _ => Err(format!("bad perftest MTU message {r:?}").into()),
        }
    }

    /// `ctx_hand_shake`: one address each way.
    pub fn hand_shake(&mut self, mine: &PerftestDest) -> Result<PerftestDest> {
        let r = self.xchg(&mine.encode(), "perftest key")?;
        PerftestDest::parse(&r)
    }

    /// `xchg_bw_reports` (peer version >= 5.33).
    pub fn bw_reports(&mut self, mine: &BwReport) -> Result<BwReport> {
        let mut g = |v: u64, what: &str| -> Result<u64> {
            let r = self.xchg(&v.to_be_bytes(), what)?;
            let mut b = [0u8; 8];
            b.copy_from_slice(&r);
            Ok(u64::from_be_bytes(b))
        };
        Ok(BwReport {
            size: g(mine.size, "perftest report size")?,
            iters: g(mine.iters, "perftest report iters")?,
            bw_peak: f64::from_bits(g(mine.bw_peak.to_bits(), "perftest report bw_peak")?),
            bw_avg: f64::from_bits(g(mine.bw_avg.to_bits(), "perftest report bw_avg")?),
            msg_rate_avg: f64::from_bits(g(mine.msg_rate_avg.to_bits(), "perftest report msgRate")?),
        })
    }

    /// After the traffic of a half-duplex BW test (both roles alike): handshake, report
    /// exchange, `ctx_close_connection` (handshake, then `"done\0"` without reading the
    /// peer's). Returns the peer's report.
    pub fn bw_finish(&mut self, mine: &PerftestDest, report: &BwReport) -> Result<BwReport> {
        self.hand_shake(mine)?;
        let theirs = self.bw_reports(report)?;
        self.hand_shake(mine)?;
        write_all(&mut self.stream, DONE, "perftest \"done\"")?;
        Ok(theirs)
    }
}
