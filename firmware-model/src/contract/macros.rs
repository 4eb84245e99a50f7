//! The declarative macros the contract is written in. Each produces typed Rust items and
//! a static description the generators (`sv`, `md`) walk, from one list, so the two
//! cannot disagree. Doc comments on entries become both rustdoc and the description in
//! the generated tables.

/// `(msb)` or `(msb, lsb)` to `(lsb, width)`.
macro_rules! __field_pos {
    ($msb:literal) => {
        ($msb, 1)
    };
    ($msb:literal, $lsb:literal) => {
        ($lsb, $msb - $lsb + 1)
    };
}

/// The second expression if given, else the first.
macro_rules! __or_default {
    ($default:expr) => {
        $default
    };
    ($default:expr, $v:expr) => {
        $v
    };
}

/// A register map: for every register `NAME / module @ offset [count]? : ACCESS { fields }`
/// a constant `NAME` (byte offset), a module with its [`Field`](super::Field)s, `OFFSET`,
/// `COUNT`, `RESET`, `FIELDS` and `DESC`, and at the end `ALL`, the table of every
/// register. A field is `NAME[msb:lsb] (: ACCESS)? = reset`; `[bit]` for one bit.
macro_rules! registers {
    ($(
        $(#[doc = $doc:literal])*
        $NAME:ident / $m:ident @ $off:literal $([$count:literal])? : $acc:ident {
            $(
                $(#[doc = $fdoc:literal])*
                $F:ident [$msb:literal $(: $lsb:literal)?] $(: $facc:ident)? = $fres:literal
            ),* $(,)?
        }
    )*) => {
        $(
            #[doc = concat!("Byte offset of `", stringify!($NAME), "` (", stringify!($acc), "):", $($doc,)* "")]
            pub const $NAME: u32 = $off;

            #[doc = concat!("Fields of `", stringify!($NAME), "`:", $($doc,)* "")]
            pub mod $m {
                use $crate::contract::{Access, Field, FieldDesc, RegDesc};

                /// Byte offset in BAR0 (of element 0 for an array).
                pub const OFFSET: u32 = $off;
                /// Number of consecutive 32-bit registers (1 unless an array).
                pub const COUNT: u32 = __or_default!(1 $(, $count)?);
                $(
                    $(#[doc = $fdoc])*
                    pub const $F: Field = {
                        let (lsb, width) = __field_pos!($msb $(, $lsb)?);
                        Field::new(concat!(stringify!($NAME), ".", stringify!($F)), lsb, width)
                    };
                )*
                /// Value after reset.
                pub const RESET: u32 = 0 $(| (($fres as u32) << $F.lsb))*;
                /// Fields, least significant first.
                pub const FIELDS: &[FieldDesc] = &[$(
                    FieldDesc {
                        name: stringify!($F),
                        field: $F,
                        access: __or_default!(Access::$acc $(, Access::$facc)?),
                        reset: $fres,
                        desc: concat!($($fdoc,)* ""),
                    }
                ),*];
                /// The register's table entry.
                pub const DESC: RegDesc = RegDesc {
                    name: stringify!($NAME),
                    offset: OFFSET,
                    count: COUNT,
                    access: Access::$acc,
                    reset: RESET,
                    desc: concat!($($doc,)* ""),
                    fields: FIELDS,
                };
                /// Byte offset of element `i` of an array (`i < COUNT`).
                pub const fn at(i: u32) -> u32 {
                    OFFSET + 4 * i
                }
            }
        )*

        /// Every register, in address order.
        pub const ALL: &[$crate::contract::RegDesc] = &[$($m::DESC),*];
    };
}

/// An enumeration with explicit 8-bit codes: the enum, `TryFrom<u8>`, `From<Self> for
/// u8`, `ALL`, `DESC` and the [`Wire`](super::Wire) impl. `Default` is the first code.
macro_rules! code_enum {
    (
        $(#[doc = $doc:literal])*
        pub enum $Name:ident : $sv:literal {
            $( $(#[doc = $vdoc:literal])* $V:ident = $code:literal ),* $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $Name {
            $( $(#[doc = $vdoc])* $V = $code ),*
        }

        impl $Name {
            /// Every code, in declaration order.
            pub const ALL: &'static [$Name] = &[$($Name::$V),*];
            /// The table the generators walk.
            pub const DESC: $crate::contract::EnumDesc = $crate::contract::EnumDesc {
                name: stringify!($Name),
                sv_prefix: $sv,
                desc: concat!($($doc,)* ""),
                variants: &[$(
                    $crate::contract::EnumVariant { name: stringify!($V), code: $code, desc: concat!($($vdoc,)* "") }
                ),*],
            };
            /// The code.
            pub const fn code(self) -> u8 {
                self as u8
            }
            /// The Rust variant name.
            pub const fn name(self) -> &'static str {
                match self { $($Name::$V => stringify!($V)),* }
            }
        }

        impl Default for $Name {
            fn default() -> Self {
                Self::ALL[0]
            }
        }

        impl TryFrom<u8> for $Name {
            type Error = $crate::contract::ContractError;
            fn try_from(v: u8) -> Result<Self, Self::Error> {
                match v {
                    $($code => Ok($Name::$V),)*
                    _ => Err($crate::contract::ContractError::UnknownCode { field: stringify!($Name), value: v.into() }),
                }
            }
        }

        impl From<$Name> for u8 {
            fn from(v: $Name) -> u8 {
                v as u8
            }
        }

        impl $crate::contract::Wire for $Name {
            const SIZE: usize = 1;
            const KIND: $crate::contract::FieldKind = $crate::contract::FieldKind::Enum(&$Name::DESC);
            fn put(&self, buf: &mut [u8], off: usize) {
                buf[off] = *self as u8;
            }
            fn take(buf: &[u8], off: usize, field: &'static str) -> Result<Self, $crate::contract::ContractError> {
                $Name::try_from(buf[off]).map_err(|_| $crate::contract::ContractError::UnknownCode { field, value: buf[off].into() })
            }
            fn to_u64(&self) -> u64 {
                *self as u64
            }
        }
    };
}

/// A set of one-bit flags over an unsigned integer: constants for each flag, set
/// operations, `DESC`, and the [`Wire`](super::Wire) impl (undefined bits are an error).
macro_rules! flags {
    (
        $(#[doc = $doc:literal])*
        pub struct $Name:ident($T:ty) : $sv:literal {
            $( $(#[doc = $fdoc:literal])* $F:ident = $bit:literal ),* $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $Name($T);

        impl $Name {
            $( $(#[doc = $fdoc])* pub const $F: Self = Self(1 << $bit); )*
            /// No flag set.
            pub const EMPTY: Self = Self(0);
            /// Every defined bit.
            pub const DEFINED: $T = 0 $(| (1 << $bit))*;
            /// The table the generators walk.
            pub const DESC: $crate::contract::BitsDesc = $crate::contract::BitsDesc {
                name: stringify!($Name),
                sv_prefix: $sv,
                width: <$T>::BITS,
                desc: concat!($($doc,)* ""),
                bits: &[$(
                    $crate::contract::BitDesc { name: stringify!($F), lsb: $bit, width: 1, desc: concat!($($fdoc,)* "") }
                ),*],
            };
            /// The raw bits.
            pub const fn bits(self) -> $T {
                self.0
            }
            /// Flags from raw bits; `None` if an undefined bit is set.
            // A type that defines every bit makes the mask zero; that is correct.
            #[allow(clippy::bad_bit_mask)]
            pub const fn from_bits(bits: $T) -> Option<Self> {
                if bits & !Self::DEFINED == 0 { Some(Self(bits)) } else { None }
            }
            /// Flags from raw bits, dropping undefined bits.
            pub const fn from_bits_truncate(bits: $T) -> Self {
                Self(bits & Self::DEFINED)
            }
            /// `true` if every flag of `other` is set.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
            /// `true` if no flag is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }
            /// Both sets.
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }
            /// `self` without the flags of `other`.
            pub const fn difference(self, other: Self) -> Self {
                Self(self.0 & !other.0)
            }
            /// `self` with the flags of `other` set (`on`) or cleared.
            pub const fn with(self, other: Self, on: bool) -> Self {
                if on { self.union(other) } else { self.difference(other) }
            }
        }

        impl core::ops::BitOr for $Name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                self.union(rhs)
            }
        }

        impl core::ops::BitOrAssign for $Name {
            fn bitor_assign(&mut self, rhs: Self) {
                *self = self.union(rhs);
            }
        }

        impl core::fmt::Debug for $Name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}(", stringify!($Name))?;
                let mut first = true;
                $(
                    if self.contains(Self::$F) {
                        if !first { f.write_str(" | ")?; }
                        f.write_str(stringify!($F))?;
                        first = false;
                    }
                )*
                let _ = first;
                f.write_str(")")
            }
        }

        impl $crate::contract::Wire for $Name {
            const SIZE: usize = core::mem::size_of::<$T>();
            const KIND: $crate::contract::FieldKind = $crate::contract::FieldKind::Bits(&$Name::DESC);
            fn put(&self, buf: &mut [u8], off: usize) {
                $crate::contract::Wire::put(&self.0, buf, off)
            }
            fn take(buf: &[u8], off: usize, field: &'static str) -> Result<Self, $crate::contract::ContractError> {
                let v = <$T as $crate::contract::Wire>::take(buf, off, field)?;
                Self::from_bits(v).ok_or($crate::contract::ContractError::ReservedBits { field, value: v.into() })
            }
            fn to_u64(&self) -> u64 {
                self.0.into()
            }
        }
    };
}

/// A descriptor: the struct (pub typed fields), `SIZE`, `LAYOUT`, `encode`, `decode`,
/// `validate`, the [`Descriptor`](super::Descriptor) impl and [`Wire`](super::Wire)
/// impls for the struct and arrays of it. A field is `name: Type, at offset (, bits n)?;`
/// where `bits n` limits an integer to its low `n` bits (the rest reserved).
macro_rules! layout {
    (
        $(#[doc = $doc:literal])*
        pub struct $Name:ident : $sv:literal, $size:literal bytes {
            $(
                $(#[doc = $fdoc:literal])*
                $f:ident : $T:ty, at $off:literal $(, bits $bits:literal)?;
            )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $Name {
            $( $(#[doc = $fdoc])* pub $f: $T, )*
        }

        impl $Name {
            /// Size in bytes.
            pub const SIZE: usize = $size;
            /// The byte layout the generators walk.
            pub const LAYOUT: $crate::contract::LayoutDesc = $crate::contract::LayoutDesc {
                name: stringify!($Name),
                sv: $sv,
                size: $size,
                desc: concat!($($doc,)* ""),
                fields: &[$(
                    $crate::contract::LayoutField {
                        name: stringify!($f),
                        offset: $off,
                        size: <$T as $crate::contract::Wire>::SIZE,
                        bits: __or_default!(<$T as $crate::contract::Wire>::BITS $(, $bits)?),
                        kind: <$T as $crate::contract::Wire>::KIND,
                        desc: concat!($($fdoc,)* ""),
                    }
                ),*],
            };
            const COVERED: [bool; $size] = $crate::contract::covered::<$size>(Self::LAYOUT.fields);

            /// The little-endian byte image. Integer fields are cut to their documented
            /// width; [`Self::validate`] reports values that would be cut.
            pub fn encode(&self) -> [u8; $size] {
                let mut b = [0u8; $size];
                $crate::contract::Descriptor::encode_into(self, &mut b);
                b
            }

            /// Read the descriptor from the first `SIZE` bytes of `bytes` (more are
            /// ignored). Fails on a short buffer, a non-zero reserved byte or bit, or an
            /// unknown enum code, naming the field.
            pub fn decode(bytes: &[u8]) -> Result<Self, $crate::contract::ContractError> {
                use $crate::contract::{ContractError, Wire};
                if bytes.len() < $size {
                    return Err(ContractError::TooShort { layout: stringify!($Name), need: $size, got: bytes.len() });
                }
                let b = &bytes[..$size];
                for (i, (&v, &covered)) in b.iter().zip(Self::COVERED.iter()).enumerate() {
                    if !covered && v != 0 {
                        return Err(ContractError::ReservedByte { layout: stringify!($Name), offset: i, value: v });
                    }
                }
                Ok(Self {$(
                    $f: {
                        const FIELD: &str = concat!(stringify!($Name), ".", stringify!($f));
                        let v = <$T as Wire>::take(b, $off, FIELD)?;
                        if !v.fits(__or_default!(<$T as Wire>::BITS $(, $bits)?)) {
                            return Err(ContractError::ReservedBits { field: FIELD, value: v.to_u64() });
                        }
                        v
                    },
                )*})
            }

            /// Check every field fits its documented width and range
            /// ([`ContractError::Overflow`](super::ContractError::Overflow) otherwise).
            pub fn validate(&self) -> Result<(), $crate::contract::ContractError> {
                use $crate::contract::{ContractError, Wire};
                $({
                    const FIELD: &str = concat!(stringify!($Name), ".", stringify!($f));
                    let bits = __or_default!(<$T as Wire>::BITS $(, $bits)?);
                    if !self.$f.fits(bits) {
                        return Err(ContractError::Overflow { field: FIELD, value: self.$f.to_u64(), width: bits });
                    }
                    self.$f.check(FIELD)?;
                })*
                Ok(())
            }
        }

        impl $crate::contract::Descriptor for $Name {
            const SIZE: usize = $size;
            const LAYOUT: $crate::contract::LayoutDesc = $Name::LAYOUT;
            fn encode_into(&self, buf: &mut [u8]) {
                use $crate::contract::Wire;
                let b = &mut buf[..$size];
                b.fill(0);
                $(
                    Wire::put(&self.$f.truncated(__or_default!(<$T as Wire>::BITS $(, $bits)?)), b, $off);
                )*
            }
            fn decode(bytes: &[u8]) -> Result<Self, $crate::contract::ContractError> {
                $Name::decode(bytes)
            }
            fn validate(&self) -> Result<(), $crate::contract::ContractError> {
                $Name::validate(self)
            }
        }

        impl $crate::contract::Wire for $Name {
            const SIZE: usize = $size;
            const KIND: $crate::contract::FieldKind = $crate::contract::FieldKind::Struct(&$Name::LAYOUT);
            fn put(&self, buf: &mut [u8], off: usize) {
                $crate::contract::Descriptor::encode_into(self, &mut buf[off..off + $size]);
            }
            fn take(buf: &[u8], off: usize, _field: &'static str) -> Result<Self, $crate::contract::ContractError> {
                $Name::decode(&buf[off..])
            }
            fn check(&self, _field: &'static str) -> Result<(), $crate::contract::ContractError> {
                self.validate()
            }
        }

        impl<const N: usize> $crate::contract::Wire for [$Name; N] {
            const SIZE: usize = $size * N;
            const KIND: $crate::contract::FieldKind = $crate::contract::FieldKind::Array(&$Name::LAYOUT, N);
            fn put(&self, buf: &mut [u8], off: usize) {
                for (i, e) in self.iter().enumerate() {
                    $crate::contract::Wire::put(e, buf, off + i * $size);
                }
            }
            fn take(buf: &[u8], off: usize, field: &'static str) -> Result<Self, $crate::contract::ContractError> {
                let mut out = [$Name::default(); N];
                for (i, e) in out.iter_mut().enumerate() {
                    *e = <$Name as $crate::contract::Wire>::take(buf, off + i * $size, field)?;
                }
                Ok(out)
            }
            fn check(&self, field: &'static str) -> Result<(), $crate::contract::ContractError> {
                self.iter().try_for_each(|e| $crate::contract::Wire::check(e, field))
            }
        }
    };
}

/// A port bundle (see [`BundleDesc`](crate::contract::BundleDesc)): fields least
/// significant first, each an unsigned integer or bool of `bits` bits.
macro_rules! bundle {
    (
        $(#[doc = $doc:literal])*
        pub struct $Name:ident : $sv:literal {
            $(
                $(#[doc = $fdoc:literal])*
                $f:ident : $T:ty, bits $bits:literal;
            )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $Name {
            $( $(#[doc = $fdoc])* pub $f: $T, )*
        }

        impl $crate::contract::Bundle for $Name {
            const DESC: $crate::contract::BundleDesc = {
                const W: &[u32] = &[$($bits),*];
                const LSB: [u32; W.len()] = $crate::contract::bundle_lsbs::<{ W.len() }>([$($bits),*]);
                const FIELDS: [$crate::contract::BundleField; W.len()] = {
                    let names = [$(stringify!($f)),*];
                    let descs = [$(concat!($($fdoc,)* "")),*];
                    let mut out = [$crate::contract::BundleField { name: "", lsb: 0, width: 0, desc: "" }; W.len()];
                    let mut i = 0;
                    while i < W.len() {
                        out[i] = $crate::contract::BundleField { name: names[i], lsb: LSB[i], width: W[i], desc: descs[i] };
                        i += 1;
                    }
                    out
                };
                $crate::contract::BundleDesc {
                    name: stringify!($Name),
                    sv: $sv,
                    width: 0 $(+ $bits)*,
                    desc: concat!($($doc,)* ""),
                    fields: &FIELDS,
                }
            };
            fn values(&self) -> Vec<u64> {
                vec![$(u64::from(self.$f)),*]
            }
            #[allow(clippy::cast_possible_truncation)]
            fn from_values(v: &[u64]) -> Self {
                let mut it = v.iter().copied();
                Self { $( $f: $crate::contract::bundle_field::<$T>(it.next().unwrap_or(0)), )* }
            }
        }
    };
}
