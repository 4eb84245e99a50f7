//! The contract's vocabulary: register fields, the tables the generators walk
//! ([`RegDesc`], [`LayoutDesc`], [`EnumDesc`], [`BitsDesc`]), the error type, and the
//! [`Wire`] trait every descriptor field type implements.

/// Why a value does not satisfy the host contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ContractError {
    /// The buffer is shorter than the descriptor.
    #[error("{layout}: need {need} bytes, got {got}")]
    TooShort {
        /// The descriptor being decoded.
        layout: &'static str,
        /// Its size in bytes.
        need: usize,
        /// Bytes supplied.
        got: usize,
    },
    /// An enumerated field holds a code the contract does not define.
    #[error("{field}: unknown code {value:#x}")]
    UnknownCode {
        /// `Layout.field` (or the enum's name for a bare `TryFrom`).
        field: &'static str,
        /// The code found.
        value: u64,
    },
    /// Bits the contract reserves inside a field are set (a flag the contract does not
    /// define, or a value wider than the field, e.g. a QPN above 24 bits).
    #[error("{field}: reserved bits set in {value:#x}")]
    ReservedBits {
        /// `Layout.field`.
        field: &'static str,
        /// The whole field value found.
        value: u64,
    },
    /// A reserved byte of a descriptor (one no field covers) is not zero.
    #[error("{layout}: reserved byte {offset} is {value:#04x}, must be 0")]
    ReservedByte {
        /// The descriptor being decoded.
        layout: &'static str,
        /// Byte offset of the reserved byte.
        offset: usize,
        /// Its value.
        value: u8,
    },
    /// A value does not fit in the field it is written to.
    #[error("{field}: value {value:#x} does not fit in {width} bits")]
    Overflow {
        /// `REG.FIELD` or `Layout.field`.
        field: &'static str,
        /// The value.
        value: u64,
        /// Width of the field in bits.
        width: u32,
    },
}

/// A bit field of a 32-bit register (or of a small bit-field type): bits
/// `lsb + width - 1 ..= lsb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// `REG.FIELD`, for error messages.
    pub name: &'static str,
    /// Least significant bit.
    pub lsb: u32,
    /// Width in bits (1..=32).
    pub width: u32,
}

impl Field {
    /// A field of `width` bits at `lsb`. Panics (at compile time in a `const`) if it does
    /// not fit in 32 bits.
    pub const fn new(name: &'static str, lsb: u32, width: u32) -> Self {
        assert!(width >= 1 && lsb + width <= 32, "field does not fit in 32 bits");
        Self { name, lsb, width }
    }

    /// Most significant bit.
    pub const fn msb(self) -> u32 {
        self.lsb + self.width - 1
    }

    /// Largest value the field holds.
    pub const fn max(self) -> u32 {
        if self.width == 32 {
            u32::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    /// The field's bits in place.
    pub const fn mask(self) -> u32 {
        self.max() << self.lsb
    }

    /// The field's value in register value `reg`.
    pub const fn get(self, reg: u32) -> u32 {
        (reg >> self.lsb) & self.max()
    }

    /// `true` if any bit of the field is set in `reg` (for one-bit flags).
    pub const fn is_set(self, reg: u32) -> bool {
        self.get(reg) != 0
    }

    /// `reg` with the field replaced by `val`; [`ContractError::Overflow`] if `val` does
    /// not fit.
    pub fn set(self, reg: u32, val: u32) -> Result<u32, ContractError> {
        if val > self.max() {
            return Err(ContractError::Overflow { field: self.name, value: val.into(), width: self.width });
        }
        Ok((reg & !self.mask()) | (val << self.lsb))
    }

    /// `val` shifted into place (all other bits zero), range-checked like [`Field::set`].
    pub fn val(self, val: u32) -> Result<u32, ContractError> {
        self.set(0, val)
    }
}

/// Software access type of a register or field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read-only: writes are ignored.
    Ro,
    /// Read/write: reads return the last value written (or the reset value).
    Rw,
    /// Write-1-to-clear: hardware sets bits, software clears a bit by writing 1 to it;
    /// writing 0 has no effect.
    W1c,
    /// Write-only: the write is an action; reads return 0.
    Wo,
    /// Read/write, self-clearing: writing 1 starts an action, the bit reads 1 until the
    /// hardware clears it when the action is complete; writing 0 has no effect.
    RwSc,
}

impl Access {
    /// The label used in the documentation tables.
    pub const fn label(self) -> &'static str {
        match self {
            Access::Ro => "RO",
            Access::Rw => "RW",
            Access::W1c => "W1C",
            Access::Wo => "WO",
            Access::RwSc => "RW/SC",
        }
    }

    /// Every access type, in documentation order.
    pub const ALL: [Access; 5] = [Access::Ro, Access::Rw, Access::W1c, Access::Wo, Access::RwSc];

    /// One-line meaning, for the documentation.
    pub const fn meaning(self) -> &'static str {
        match self {
            Access::Ro => "read-only; writes are ignored",
            Access::Rw => "read/write; reads return the value written",
            Access::W1c => "write 1 to clear; hardware sets the bit, writing 0 has no effect",
            Access::Wo => "write-only; the write is an action, reads return 0",
            Access::RwSc => {
                "self-clearing; writing 1 starts an action, the bit reads 1 until the hardware \
                 clears it when the action is done, writing 0 has no effect"
            }
        }
    }
}

/// One field of a register, as the generators see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    /// Field name (`ENABLE`).
    pub name: &'static str,
    /// Position.
    pub field: Field,
    /// Access type (usually the register's).
    pub access: Access,
    /// Value of the field after reset.
    pub reset: u32,
    /// One-paragraph description.
    pub desc: &'static str,
}

/// One register (or an array of consecutive 32-bit registers), as the generators see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegDesc {
    /// Register name (`CTRL`).
    pub name: &'static str,
    /// Byte offset in BAR0 (of element 0 for an array).
    pub offset: u32,
    /// Number of consecutive 32-bit registers (1 unless an array).
    pub count: u32,
    /// Access type of the register; individual fields may differ (see [`FieldDesc`]).
    pub access: Access,
    /// Value after reset (the fields' reset values in place).
    pub reset: u32,
    /// One-paragraph description.
    pub desc: &'static str,
    /// Fields, least significant first. Bits no field covers are reserved: they read 0
    /// and software writes them as 0.
    pub fields: &'static [FieldDesc],
}

impl RegDesc {
    /// One past the last byte of the register (or array).
    pub const fn end(&self) -> u32 {
        self.offset + 4 * self.count
    }

    /// Bits covered by some field.
    pub fn defined_mask(&self) -> u32 {
        self.fields.iter().fold(0, |m, f| m | f.field.mask())
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static FieldDesc> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// A contiguous part of the register map with a common purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// Heading.
    pub name: &'static str,
    /// First byte offset.
    pub base: u32,
    /// One past the last byte offset.
    pub end: u32,
    /// What lives here.
    pub desc: &'static str,
}

/// One code of an enumeration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumVariant {
    /// Rust variant name (`LocLenErr`).
    pub name: &'static str,
    /// The code.
    pub code: u8,
    /// Description.
    pub desc: &'static str,
}

/// An enumeration with explicit 8-bit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumDesc {
    /// Rust type name (`CqeStatus`).
    pub name: &'static str,
    /// Prefix of the SystemVerilog localparams (`CQE_STATUS` gives `CQE_STATUS_LOC_LEN_ERR`).
    pub sv_prefix: &'static str,
    /// Description.
    pub desc: &'static str,
    /// The codes, in declaration order.
    pub variants: &'static [EnumVariant],
}

/// A named bit or bit range of a [`BitsDesc`] type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitDesc {
    /// Name (`SIGNALED`).
    pub name: &'static str,
    /// Least significant bit.
    pub lsb: u32,
    /// Width in bits.
    pub width: u32,
    /// Description.
    pub desc: &'static str,
}

/// A flags or bit-field type: an unsigned integer whose bits have names. Bits no entry
/// covers are reserved (zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitsDesc {
    /// Rust type name (`SqFlags`).
    pub name: &'static str,
    /// Prefix of the SystemVerilog localparams (`SQ_FLAG` gives `SQ_FLAG_SIGNALED_BIT`).
    pub sv_prefix: &'static str,
    /// Width of the underlying integer in bits.
    pub width: u32,
    /// Description.
    pub desc: &'static str,
    /// The named bits, least significant first.
    pub bits: &'static [BitDesc],
}

/// What a descriptor field holds.
#[derive(Clone, Copy, Debug)]
pub enum FieldKind {
    /// Little-endian unsigned integer of 1, 2, 4 or 8 bytes.
    Uint,
    /// One byte, 0 or 1.
    Bool,
    /// One byte holding a code of the enumeration.
    Enum(&'static EnumDesc),
    /// Little-endian unsigned integer with named bits.
    Bits(&'static BitsDesc),
    /// Bytes in memory order (byte 0 at the lowest address), e.g. a MAC or IP address in
    /// network order.
    Bytes,
    /// A nested descriptor.
    Struct(&'static LayoutDesc),
    /// Consecutive nested descriptors.
    Array(&'static LayoutDesc, usize),
    /// The same bytes read one of several ways; the descriptor says which (for
    /// [`SqWqe`](super::SqWqe) the `INLINE` flag). Offsets of the alternatives are
    /// relative to the field.
    Union(&'static [LayoutField]),
}

/// One field of a descriptor.
#[derive(Clone, Copy, Debug)]
pub struct LayoutField {
    /// Field name (`wr_id`), the same in Rust and SystemVerilog.
    pub name: &'static str,
    /// Byte offset in the descriptor.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Bits used, from bit 0 of the little-endian value; the bits above are reserved
    /// (zero). Equal to `8 * size` for most fields.
    pub bits: u32,
    /// What the field holds.
    pub kind: FieldKind,
    /// Description.
    pub desc: &'static str,
}

/// The byte layout of a descriptor.
#[derive(Clone, Copy, Debug)]
pub struct LayoutDesc {
    /// Rust type name (`SqWqe`).
    pub name: &'static str,
    /// SystemVerilog base name (`sq_wqe` gives `sq_wqe_t` and `SQ_WQE_*`).
    pub sv: &'static str,
    /// Size in bytes.
    pub size: usize,
    /// Description.
    pub desc: &'static str,
    /// Fields in offset order. Bytes no field covers are reserved (zero).
    pub fields: &'static [LayoutField],
}

impl LayoutDesc {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static LayoutField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Byte ranges no field covers (reserved, zero), in order.
    pub fn reserved(&self) -> Vec<core::ops::Range<usize>> {
        let map = self.covered_map();
        let mut out: Vec<core::ops::Range<usize>> = Vec::new();
        for (i, &c) in map.iter().enumerate() {
            if c {
                continue;
            }
            match out.last_mut() {
                Some(r) if r.end == i => r.end = i + 1,
                _ => out.push(i..i + 1),
            }
        }
        out
    }

    /// `covered[i]`: some field covers byte `i`.
    pub fn covered_map(&self) -> Vec<bool> {
        let mut map = vec![false; self.size];
        for f in self.fields {
            for b in map.iter_mut().skip(f.offset).take(f.size) {
                *b = true;
            }
        }
        map
    }
}

/// `covered[i]`: some field covers byte `i` (the compile-time form of
/// [`LayoutDesc::covered_map`], used by the generated decoders).
pub const fn covered<const N: usize>(fields: &[LayoutField]) -> [bool; N] {
    let mut map = [false; N];
    let mut i = 0;
    while i < fields.len() {
        let mut b = fields[i].offset;
        while b < fields[i].offset + fields[i].size {
            map[b] = true;
            b += 1;
        }
        i += 1;
    }
    map
}

/// A type that is stored in a descriptor: how many bytes it takes, what the generators
/// should call it, and how it is written and read.
///
/// `put` and `take` get the whole descriptor buffer and the field's offset, so a field
/// whose meaning depends on another field (the [`SqData`](super::SqData) union and the
/// `INLINE` flag) can see it. Callers guarantee `off + SIZE <= buf.len()`.
pub trait Wire: Sized + Copy {
    /// Size in bytes.
    const SIZE: usize;
    /// Bits used (see [`LayoutField::bits`]).
    const BITS: u32 = 8 * Self::SIZE as u32;
    /// What the field holds.
    const KIND: FieldKind;
    /// Write `self` at `buf[off..off + SIZE]`.
    fn put(&self, buf: &mut [u8], off: usize);
    /// Read a value from `buf[off..off + SIZE]`; `field` names it in errors.
    fn take(buf: &[u8], off: usize, field: &'static str) -> Result<Self, ContractError>;
    /// `true` if the value fits in the low `bits` bits (always, except for integers).
    fn fits(&self, _bits: u32) -> bool {
        true
    }
    /// The value cut to its low `bits` bits (integers; others unchanged).
    fn truncated(self, _bits: u32) -> Self {
        self
    }
    /// The value as a number, for error messages (0 where that means nothing).
    fn to_u64(&self) -> u64 {
        0
    }
    /// Range checks beyond `bits` (nested descriptors, multi-bit sub-fields).
    fn check(&self, _field: &'static str) -> Result<(), ContractError> {
        Ok(())
    }
}

macro_rules! wire_uint {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            const KIND: FieldKind = FieldKind::Uint;
            fn put(&self, buf: &mut [u8], off: usize) {
                buf[off..off + Self::SIZE].copy_from_slice(&self.to_le_bytes());
            }
            fn take(buf: &[u8], off: usize, _field: &'static str) -> Result<Self, ContractError> {
                let mut b = [0u8; core::mem::size_of::<$t>()];
                b.copy_from_slice(&buf[off..off + Self::SIZE]);
                Ok(<$t>::from_le_bytes(b))
            }
            fn fits(&self, bits: u32) -> bool {
                bits >= <$t>::BITS || (*self >> bits) == 0
            }
            fn truncated(self, bits: u32) -> Self {
                if bits >= <$t>::BITS { self } else { self & ((1 << bits) - 1) }
            }
            fn to_u64(&self) -> u64 {
                (*self).into()
            }
        }
    )*};
}
wire_uint!(u8, u16, u32, u64);

impl Wire for bool {
    const SIZE: usize = 1;
    const BITS: u32 = 1;
    const KIND: FieldKind = FieldKind::Bool;
    fn put(&self, buf: &mut [u8], off: usize) {
        buf[off] = u8::from(*self);
    }
    fn take(buf: &[u8], off: usize, field: &'static str) -> Result<Self, ContractError> {
        match buf[off] {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ContractError::ReservedBits { field, value: v.into() }),
        }
    }
    fn to_u64(&self) -> u64 {
        u64::from(*self)
    }
}

impl<const N: usize> Wire for [u8; N] {
    const SIZE: usize = N;
    const KIND: FieldKind = FieldKind::Bytes;
    fn put(&self, buf: &mut [u8], off: usize) {
        buf[off..off + N].copy_from_slice(self);
    }
    fn take(buf: &[u8], off: usize, _field: &'static str) -> Result<Self, ContractError> {
        let mut b = [0u8; N];
        b.copy_from_slice(&buf[off..off + N]);
        Ok(b)
    }
}

/// A descriptor: a fixed-size little-endian byte image with a [`LayoutDesc`].
///
/// Every descriptor type also has the same items as inherent associated items
/// (`Cqe::SIZE`, `Cqe::LAYOUT`, `cqe.encode() -> [u8; 32]`, `Cqe::decode(&bytes)`), so
/// this trait is only needed for generic code.
pub trait Descriptor: Sized + Copy + PartialEq + core::fmt::Debug {
    /// Size in bytes.
    const SIZE: usize;
    /// Byte layout.
    const LAYOUT: LayoutDesc;
    /// Write the byte image into `buf[..SIZE]` (panics if `buf` is shorter). Integer
    /// fields are cut to their documented width; [`Descriptor::validate`] reports values
    /// that would be cut.
    fn encode_into(&self, buf: &mut [u8]);
    /// Read a descriptor from the first `SIZE` bytes of `bytes`.
    fn decode(bytes: &[u8]) -> Result<Self, ContractError>;
    /// Check every field fits its documented width and range.
    fn validate(&self) -> Result<(), ContractError>;
    /// The byte image as a `Vec`.
    fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; Self::SIZE];
        self.encode_into(&mut v);
        v
    }
}

/// One field of a port bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleField {
    /// Member name (`addr`).
    pub name: &'static str,
    /// Least significant bit in the bundle's vector.
    pub lsb: u32,
    /// Width in bits (at most 64).
    pub width: u32,
    /// Description.
    pub desc: &'static str,
}

/// A port bundle: the payload of a valid/ready request or result port between two HDL
/// blocks, a packed struct (`<sv>_t`, `<SV>_W` bits) whose first field is the least
/// significant. Verilated, it is one port of `W` bits; [`Bundle`] packs and unpacks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleDesc {
    /// Rust type name (`DmaReq`).
    pub name: &'static str,
    /// SystemVerilog base name (`dma_req` gives `dma_req_t` and `DMA_REQ_W`).
    pub sv: &'static str,
    /// Width in bits.
    pub width: u32,
    /// Description.
    pub desc: &'static str,
    /// Fields, least significant first.
    pub fields: &'static [BundleField],
}

/// The bit offsets of `widths` laid end to end from bit 0 (`const` helper of `bundle!`).
pub const fn bundle_lsbs<const N: usize>(widths: [u32; N]) -> [u32; N] {
    let mut out = [0u32; N];
    let mut i = 1;
    while i < N {
        out[i] = out[i - 1] + widths[i - 1];
        i += 1;
    }
    out
}

/// A port bundle's Rust type: packs to and unpacks from the 32-bit words a Verilated port
/// holds (word `i` is bits `[32i+31:32i]`).
pub trait Bundle: Sized + Copy + PartialEq + core::fmt::Debug {
    /// The bundle's layout.
    const DESC: BundleDesc;
    /// The field values, in the order of `DESC.fields`, cut to their widths.
    fn values(&self) -> Vec<u64>;
    /// The bundle of these field values (in the order of `DESC.fields`).
    fn from_values(v: &[u64]) -> Self;
    /// Pack into `words` (at least `ceil(W / 32)` of them; bits above `W` are zero).
    fn to_words(&self, words: &mut [u32]) {
        words.fill(0);
        for (f, v) in Self::DESC.fields.iter().zip(self.values()) {
            let v = if f.width >= 64 { v } else { v & ((1u64 << f.width) - 1) };
            for b in 0..f.width {
                if v >> b & 1 != 0 {
                    let at = (f.lsb + b) as usize;
                    words[at / 32] |= 1 << (at % 32);
                }
            }
        }
    }
    /// Unpack from `words` (bits above `W` are ignored).
    fn from_words(words: &[u32]) -> Self {
        let v: Vec<u64> = Self::DESC
            .fields
            .iter()
            .map(|f| {
                (0..f.width).fold(0u64, |acc, b| {
                    let at = (f.lsb + b) as usize;
                    acc | u64::from(words[at / 32] >> (at % 32) & 1) << b
                })
            })
            .collect();
        Self::from_values(&v)
    }
}

/// A bundle field's value from its bits (`bundle!` helper): integers are cut to their type
/// (the bundle's width is never wider), a bool is bit 0.
pub fn bundle_field<T: BundleValue>(v: u64) -> T {
    T::from_bits(v)
}

/// Types a bundle field may have.
pub trait BundleValue {
    /// The value of these bits.
    fn from_bits(v: u64) -> Self;
}

macro_rules! bundle_value_int {
    ($($t:ty),*) => {$(
        impl BundleValue for $t {
            #[allow(clippy::cast_possible_truncation)]
            fn from_bits(v: u64) -> Self {
                v as $t
            }
        }
    )*};
}
bundle_value_int!(u8, u16, u32, u64);

impl BundleValue for bool {
    fn from_bits(v: u64) -> Self {
        v & 1 != 0
    }
}
