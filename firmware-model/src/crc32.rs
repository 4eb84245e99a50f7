//! CRC-32 (IEEE 802.3 / zlib polynomial, reflected) as linear algebra over GF(2).
//!
//! The HDL computes the ICRC with wide parallel updates and then corrects for zero bytes it
//! had to feed in place of absent ones; both are linear maps of the 32-bit CRC register.
//! This module derives those maps from the byte-wise definition, so the constants in the
//! generated SystemVerilog (`hdl/rtl/gen/roce_crc32_*.sv`) and the model share one origin.
//!
//! Conventions: the *raw register* is the CRC state before the final inversion (zlib's
//! `crc32()` returns `!raw` when started from `0xFFFF_FFFF`). Bit `i` of a byte vector is bit
//! `i % 8` of byte `i / 8`, byte 0 first on the wire — the same as AXI-Stream lane order.

/// The reflected CRC-32 polynomial (0x04C11DB7 bit-reversed).
pub const POLY_REFLECTED: u32 = 0xEDB8_8320;

/// Raw register after feeding eight 0xFF bytes (the masked LRH of the ICRC) into a register
/// that started at 0xFFFF_FFFF. Linux rxe uses the same constant as its ICRC seed.
pub const ICRC_SEED: u32 = 0xDEBB_20E3;

/// Raw register after feeding a message followed by its own CRC-32 (least-significant byte
/// first): the check residue. A frame whose covered bytes plus ICRC leave this value in the
/// register has a correct ICRC.
pub const RESIDUE: u32 = 0xDEBB_20E3;

const fn make_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY_REFLECTED } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = make_table();

/// Feed `data` into the raw register `state` byte by byte (the reference definition; slow).
pub fn raw_update(mut state: u32, data: &[u8]) -> u32 {
    for &b in data {
        state = (state >> 8) ^ TABLE[((state ^ b as u32) & 0xFF) as usize];
    }
    state
}

/// A linear map from `n` input bits to 32 output bits: `rows[j]` holds, for output bit `j`,
/// the input bits that are XORed together (bit `i` of the mask = input bit `i`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gf2Map {
    /// Number of input bits.
    pub inputs: usize,
    /// One mask per output bit; each mask has `inputs` bits, little-endian in `u64` words.
    pub rows: [Vec<u64>; 32],
}

impl Gf2Map {
    fn from_columns(inputs: usize, col: impl Fn(usize) -> u32) -> Self {
        let words = inputs.div_ceil(64);
        let mut rows: [Vec<u64>; 32] = std::array::from_fn(|_| vec![0u64; words]);
        for i in 0..inputs {
            let c = col(i);
            for (j, row) in rows.iter_mut().enumerate() {
                if c >> j & 1 != 0 {
                    row[i / 64] |= 1 << (i % 64);
                }
            }
        }
        Gf2Map { inputs, rows }
    }

    /// Apply the map to a 32-bit input (only for maps with 32 inputs).
    pub fn apply32(&self, x: u32) -> u32 {
        debug_assert_eq!(self.inputs, 32);
        let mut out = 0;
        for (j, row) in self.rows.iter().enumerate() {
            out |= (((row[0] as u32) & x).count_ones() & 1) << j;
        }
        out
    }

    /// Apply the map to a byte vector of `inputs / 8` bytes.
    pub fn apply_bytes(&self, data: &[u8]) -> u32 {
        debug_assert_eq!(self.inputs, data.len() * 8);
        let mut out = 0;
        for (j, row) in self.rows.iter().enumerate() {
            let mut p = 0u32;
            for (i, &b) in data.iter().enumerate() {
                let m = (row[i / 8] >> (8 * (i % 8))) as u8;
                p ^= (m & b).count_ones();
            }
            out |= (p & 1) << j;
        }
        out
    }

    /// Output bit `j`'s mask as a hexadecimal SystemVerilog literal body (MSB first).
    pub fn row_hex(&self, j: usize) -> String {
        let nibbles = self.inputs.div_ceil(4);
        let mut s = String::with_capacity(nibbles);
        for n in (0..nibbles).rev() {
            let v = (self.rows[j][n / 16] >> (4 * (n % 16))) & 0xF;
            s.push(char::from_digit(v as u32, 16).unwrap_or('0'));
        }
        s
    }
}

/// The map `state -> raw_update(state, [0; n])`: the register after `n` zero bytes.
pub fn zero_shift(n: usize) -> Gf2Map {
    let zeros = vec![0u8; n];
    Gf2Map::from_columns(32, |i| raw_update(1 << i, &zeros))
}

/// The inverse of [`zero_shift`]: recovers the register from before `n` trailing zero bytes.
pub fn zero_unshift(n: usize) -> Gf2Map {
    let fwd = zero_shift(n);
    invert32(&fwd)
}

/// The map `data -> raw_update(0, data)` for a `bytes`-byte block (the data half of a
/// parallel update; the state half is [`zero_shift`]`(bytes)`).
pub fn data_map(bytes: usize) -> Gf2Map {
    Gf2Map::from_columns(bytes * 8, |i| {
        let mut d = vec![0u8; bytes];
        d[i / 8] = 1 << (i % 8);
        raw_update(0, &d)
    })
}

/// Compose two 32->32 maps: `(a ∘ b)(x) = a(b(x))`.
pub fn compose32(a: &Gf2Map, b: &Gf2Map) -> Gf2Map {
    Gf2Map::from_columns(32, |i| a.apply32(b.apply32(1 << i)))
}

/// Invert a 32x32 map by Gauss-Jordan elimination. CRC zero-shift maps are always
/// invertible (the polynomial has a constant term), so failure is a programming error.
fn invert32(m: &Gf2Map) -> Gf2Map {
    // Column form: col[i] = m(e_i). Solve m * X = I column by column via row reduction.
    let cols: Vec<u32> = (0..32).map(|i| m.apply32(1 << i)).collect();
    // Build augmented rows: row j = (bits of output j across inputs i) | identity.
    let mut a = [0u64; 32];
    for (j, row) in a.iter_mut().enumerate() {
        let mut r = 0u64;
        for (i, c) in cols.iter().enumerate() {
            if c >> j & 1 != 0 {
                r |= 1 << i;
            }
        }
        *row = r | (1u64 << (32 + j));
    }
    for col in 0..32 {
        let pivot = (col..32).find(|&r| a[r] >> col & 1 != 0).expect("CRC zero-shift map is invertible");
        a.swap(col, pivot);
        for r in 0..32 {
            if r != col && a[r] >> col & 1 != 0 {
                a[r] ^= a[col];
            }
        }
    }
    // Now row j = e_j | inv row j.
    let mut rows: [Vec<u64>; 32] = std::array::from_fn(|_| vec![0u64]);
    for (j, row) in rows.iter_mut().enumerate() {
        row[0] = a[j] >> 32;
    }
    Gf2Map { inputs: 32, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_crc32fast() {
        let data = b"123456789";
        assert_eq!(!raw_update(0xFFFF_FFFF, data), 0xCBF4_3926);
        assert_eq!(!raw_update(0xFFFF_FFFF, data), crc32fast::hash(data));
    }

    #[test]
    fn seed_and_residue_constants() {
        assert_eq!(raw_update(0xFFFF_FFFF, &[0xFF; 8]), ICRC_SEED);
        let msg = b"any message at all";
        let crc = !raw_update(0xFFFF_FFFF, msg);
        let mut with = msg.to_vec();
        with.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(raw_update(0xFFFF_FFFF, &with), RESIDUE);
    }

    #[test]
    fn init_folds_into_first_bytes() {
        // The HDL starts every frame from a zero register and XORs the seed into the first
        // four covered bytes instead; leading zero bytes leave a zero register unchanged.
        let msg: Vec<u8> = (0..37u8).map(|i| i.wrapping_mul(29) ^ 0x5A).collect();
        let mut folded = vec![0u8; 11];
        folded.extend_from_slice(&msg);
        for (k, b) in ICRC_SEED.to_le_bytes().iter().enumerate() {
            folded[11 + k] ^= b;
        }
        assert_eq!(raw_update(0, &folded), raw_update(ICRC_SEED, &msg));
    }

    #[test]
    fn parallel_update_matches_serial() {
        for bytes in [8usize, 32, 64] {
            let a = zero_shift(bytes);
            let b = data_map(bytes);
            let data: Vec<u8> = (0..bytes).map(|i| (i * 37 + 11) as u8).collect();
            let s = 0x1234_5678;
            assert_eq!(a.apply32(s) ^ b.apply_bytes(&data), raw_update(s, &data));
        }
    }

    #[test]
    fn unshift_inverts_zero_bytes() {
        for n in [1usize, 2, 3, 4, 7, 16, 48, 63] {
            let s = 0xA5C3_0F96u32.rotate_left(n as u32);
            let shifted = raw_update(s, &vec![0u8; n]);
            assert_eq!(zero_unshift(n).apply32(shifted), s, "n = {n}");
        }
        let c = compose32(&zero_unshift(3), &zero_unshift(4));
        assert_eq!(c, zero_unshift(7));
    }
}
