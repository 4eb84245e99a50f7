//! AXI4-Stream beats as the models and the cosimulation exchange them.

/// One AXI4-Stream transfer of a `bytes`-wide datapath (at most 64 bytes, i.e. 512 bits).
///
/// Lane `i` is byte `i` of `data` and bit `i` of `keep`; lane 0 is first on the wire.
/// Frames use contiguous `keep` starting at lane 0, all ones on every beat but the last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisBeat {
    /// `tdata`, one byte per lane (length = datapath bytes). Bytes of lanes whose `keep` bit
    /// is clear are don't-care and are compared only where `keep` is set.
    pub data: Vec<u8>,
    /// `tkeep`.
    pub keep: u64,
    /// `tlast`.
    pub last: bool,
    /// `tuser` (meaning defined per port).
    pub user: u8,
}

impl AxisBeat {
    /// Number of valid bytes (`keep` is contiguous from lane 0).
    pub fn len(&self) -> usize {
        self.keep.count_ones() as usize
    }

    /// Whether no lane is valid.
    pub fn is_empty(&self) -> bool {
        self.keep == 0
    }

    /// The valid bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len().min(self.data.len())]
    }
}

/// `keep` with the low `n` lanes set.
pub fn keep_mask(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Split a frame into beats of `bytes` lanes; `user` goes on the last beat.
/// Invalid lanes of the last beat are zero.
pub fn split_frame(frame: &[u8], bytes: usize, user: u8) -> Vec<AxisBeat> {
    assert!((1..=64).contains(&bytes), "datapath must be 1..=64 bytes");
    let n = frame.len().div_ceil(bytes).max(1);
    (0..n)
        .map(|i| {
            let chunk = frame.get(i * bytes..frame.len().min((i + 1) * bytes)).unwrap_or(&[]);
            let mut data = chunk.to_vec();
            data.resize(bytes, 0);
            let last = i + 1 == n;
            AxisBeat { data, keep: keep_mask(chunk.len()), last, user: if last { user } else { 0 } }
        })
        .collect()
}

/// Concatenate the valid bytes of a frame's beats; returns the bytes and the last beat's user.
pub fn join_frame(beats: &[AxisBeat]) -> (Vec<u8>, u8) {
    let mut v = Vec::new();
    for b in beats {
        v.extend_from_slice(b.bytes());
    }
    (v, beats.last().map_or(0, |b| b.user))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_join_round_trip() {
        for len in [1usize, 7, 8, 9, 63, 64, 65, 200] {
            let f: Vec<u8> = (0..len).map(|i| i as u8).collect();
            for bytes in [8, 32, 64] {
                let b = split_frame(&f, bytes, 1);
                assert!(b.iter().rev().skip(1).all(|x| x.keep == keep_mask(bytes) && !x.last));
                assert_eq!(join_frame(&b), (f.clone(), 1));
            }
        }
    }
}
