//! Small internal helpers: range checks and a bounds-checked output cursor.

use super::error::BuildError;

/// Fails with [`BuildError::FieldOutOfRange`] if `value > max`.
pub(crate) fn check_range(field: &'static str, value: u64, max: u64) -> Result<(), BuildError> {
    if value > max {
        Err(BuildError::FieldOutOfRange { field, value, max })
    } else {
        Ok(())
    }
}

/// Reads a big-endian 24-bit value.
pub(crate) const fn be24(b0: u8, b1: u8, b2: u8) -> u32 {
    u32::from_be_bytes([0, b0, b1, b2])
}

/// Sequential writer over a mutable byte slice that never panics: every `take` either
/// hands out the next `n` bytes or fails with [`BuildError::BufferTooSmall`].
pub(crate) struct Cursor<'a> {
    rest: &'a mut [u8],
    /// Length of the whole buffer, for error reporting.
    total: usize,
    /// Bytes handed out so far.
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        let total = buf.len();
        Cursor { rest: buf, total, pos: 0 }
    }

    fn too_small(&self, n: usize) -> BuildError {
        BuildError::BufferTooSmall { need: self.pos + n, have: self.total }
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a mut [u8], BuildError> {
        if self.rest.len() < n {
            return Err(self.too_small(n));
        }
        let rest = core::mem::take(&mut self.rest);
        let (head, tail) = rest.split_at_mut(n);
        self.rest = tail;
        self.pos += n;
        Ok(head)
    }

    /// Copies `data` into the next `data.len()` bytes.
    pub(crate) fn put(&mut self, data: &[u8]) -> Result<(), BuildError> {
        self.take(data.len())?.copy_from_slice(data);
        Ok(())
    }

    /// Zeroes the next `n` bytes.
    pub(crate) fn zero(&mut self, n: usize) -> Result<(), BuildError> {
        self.take(n)?.fill(0);
        Ok(())
    }

    /// Bytes handed out so far.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
}

/// The first `N` bytes of `out` as an array, or [`BuildError::BufferTooSmall`].
pub(crate) fn out_chunk<const N: usize>(out: &mut [u8]) -> Result<&mut [u8; N], BuildError> {
    let have = out.len();
    out.first_chunk_mut::<N>().ok_or(BuildError::BufferTooSmall { need: N, have })
}
