//! Reading and writing packet captures (classic pcap, Ethernet link type).

use std::fs::File;
use std::path::Path;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::{DataLink, TsResolution};

use crate::SimError;

/// One captured frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// Capture timestamp.
    pub ts: std::time::Duration,
    /// Original length on the wire.
    pub orig_len: u32,
    /// The captured bytes.
    pub data: Vec<u8>,
}

fn perr(path: &Path, msg: impl std::fmt::Display) -> SimError {
    SimError::Pcap { path: path.display().to_string(), msg: msg.to_string() }
}

/// Read every frame of a classic pcap file with Ethernet link type.
pub fn read(path: &Path) -> Result<Vec<Captured>, SimError> {
    let f = File::open(path).map_err(|e| perr(path, e))?;
    let mut r = PcapReader::new(f).map_err(|e| perr(path, format!("not a pcap file: {e}")))?;
    let dl = r.header().datalink;
    if dl != DataLink::ETHERNET {
        return Err(perr(path, format!("link type {dl:?} is not Ethernet")));
    }
    let mut v = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| perr(path, format!("bad record after {} frames: {e}", v.len())))?;
        v.push(Captured { ts: p.timestamp, orig_len: p.orig_len, data: p.data.into_owned() });
    }
    Ok(v)
}

/// Write frames to a classic pcap file (Ethernet link type, microsecond timestamps).
pub fn write(path: &Path, frames: &[Captured]) -> Result<(), SimError> {
    write_with(path, frames, TsResolution::MicroSecond)
}

/// Write frames to a classic pcap file with nanosecond timestamps (engine cycles of 4 ns).
pub fn write_ns(path: &Path, frames: &[Captured]) -> Result<(), SimError> {
    write_with(path, frames, TsResolution::NanoSecond)
}

fn write_with(path: &Path, frames: &[Captured], ts_resolution: TsResolution) -> Result<(), SimError> {
    let f = File::create(path).map_err(|e| perr(path, e))?;
    let hdr = PcapHeader { datalink: DataLink::ETHERNET, snaplen: 65535, ts_resolution, ..Default::default() };
    let mut w = PcapWriter::with_header(f, hdr).map_err(|e| perr(path, e))?;
    for c in frames {
        let orig = c.orig_len.max(c.data.len() as u32);
        w.write_packet(&PcapPacket::new(c.ts, orig, &c.data)).map_err(|e| perr(path, e))?;
    }
    Ok(())
}
