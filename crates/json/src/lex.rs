//! Byte-level scanning: string bodies, escapes and numbers, straight from slices.

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// A high bit in every byte of `w` that is `"`, `\` or below 0x20 (and possibly in bytes
/// above such a byte, never below it, so the lowest flag is exact).
#[inline(always)]
fn special_mask(w: u64) -> u64 {
    #[inline(always)]
    fn zero_bytes(x: u64) -> u64 {
        x.wrapping_sub(LO) & !x & HI
    }
    let quote = zero_bytes(w ^ (LO * u64::from(b'"')));
    let backslash = zero_bytes(w ^ (LO * u64::from(b'\\')));
    let control = w.wrapping_sub(LO * 0x20) & !w & HI;
    quote | backslash | control
}

#[inline(always)]
fn is_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// The index of the first byte at or after `i` that is `"`, `\` or a control character,
/// or `buf.len()` if there is none. Eight bytes per step.
#[inline]
pub(crate) fn find_special(buf: &[u8], mut i: usize) -> usize {
    while i + 16 <= buf.len() {
        let mut a = [0; 8];
        let mut b = [0; 8];
        a.copy_from_slice(&buf[i..i + 8]);
        b.copy_from_slice(&buf[i + 8..i + 16]);
        let ma = special_mask(u64::from_le_bytes(a));
        let mb = special_mask(u64::from_le_bytes(b));
        if ma | mb != 0 {
            return if ma != 0 {
                i + (ma.trailing_zeros() / 8) as usize
            } else {
                i + 8 + (mb.trailing_zeros() / 8) as usize
            };
        }
        i += 16;
    }
    if i + 8 <= buf.len() {
        let mut a = [0; 8];
        a.copy_from_slice(&buf[i..i + 8]);
        let ma = special_mask(u64::from_le_bytes(a));
        if ma != 0 {
            return i + (ma.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < buf.len() {
        if is_special(buf[i]) {
            return i;
        }
        i += 1;
    }
    buf.len()
}

/// Where a string body continues: `Ok(n)` when `buf[..n]` ends with the closing quote,
/// `Err(escaped)` when `buf` ends first (`escaped`: it ends with an escaping backslash).
/// `escaped` says whether the byte before `buf` was an escaping backslash.
pub(crate) fn string_extent(buf: &[u8], mut escaped: bool) -> Result<usize, bool> {
    let mut i = 0;
    if escaped {
        if buf.is_empty() {
            return Err(true);
        }
        i = 1;
        escaped = false;
    }
    loop {
        i = find_special(buf, i);
        match buf.get(i) {
            None => return Err(escaped),
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => {
                if i + 1 == buf.len() {
                    return Err(true);
                }
                i += 2;
            }
            // A control character: an error the decoder reports with its offset.
            Some(_) => i += 1,
        }
    }
}

/// Appends bytes from a string body, replacing invalid UTF-8 with U+FFFD.
#[inline]
pub(crate) fn push_lossy(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Four hex digits at `buf[i..i + 4]`: `Ok(None)` if the buffer ends first, `Err(())`
/// if a byte that arrived is not a hex digit.
pub(crate) fn hex4(buf: &[u8], i: usize) -> Result<Option<u16>, ()> {
    let mut value: u16 = 0;
    for k in 0..4 {
        let Some(&b) = buf.get(i + k) else {
            return Ok(None);
        };
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(()),
        };
        value = (value << 4) | u16::from(digit);
    }
    Ok(Some(value))
}

/// A number as scanned from a slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Number {
    /// An integer of at most 18 digits: exact in `i64`.
    Small(i64),
    /// An integer of 19 or more digits (`buf[start..end]`, sign included).
    Long,
    /// With a fraction or an exponent.
    Float,
}

/// Why a number does not scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumberError {
    /// The buffer ends where the number may continue (or, at the end of the input,
    /// where it must continue).
    Incomplete,
    /// Malformed at `buf[at]`, for the reason given.
    Bad { at: usize, why: &'static str },
}

/// Scans the number at `buf[start..]` (whose first byte is `-` or a digit). Returns its
/// end and form. At `eof` the end of `buf` ends the number; otherwise more digits could
/// follow in the next chunk, so reaching the end is [`NumberError::Incomplete`].
#[inline]
pub(crate) fn scan_number(
    buf: &[u8],
    start: usize,
    eof: bool,
) -> Result<(usize, Number), NumberError> {
    let len = buf.len();
    let mut i = start;
    let negative = buf.get(i) == Some(&b'-');
    if negative {
        i += 1;
    }
    // Integer part.
    let int_start = i;
    let mut value: u64 = 0;
    match buf.get(i) {
        None => return Err(NumberError::Incomplete),
        Some(b'0') => i += 1,
        Some(&d @ b'1'..=b'9') => {
            value = u64::from(d - b'0');
            i += 1;
            while i < len {
                let d = buf[i].wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                value = value.wrapping_mul(10).wrapping_add(u64::from(d));
                i += 1;
            }
        }
        Some(_) => {
            return Err(NumberError::Bad {
                at: i,
                why: "a digit must follow '-'",
            })
        }
    }
    let int_digits = i - int_start;
    if i == len {
        return if eof {
            Ok((i, int_form(negative, value, int_digits)))
        } else {
            Err(NumberError::Incomplete)
        };
    }
    let mut float = false;
    if buf[i].is_ascii_digit() {
        // Only after a leading '0'.
        return Err(NumberError::Bad {
            at: int_start,
            why: "a number cannot start with a leading zero",
        });
    }
    if buf[i] == b'.' {
        float = true;
        i += 1;
        i = digits(buf, i, "a digit must follow the decimal point")?;
        if i == len {
            return if eof {
                Ok((i, Number::Float))
            } else {
                Err(NumberError::Incomplete)
            };
        }
    }
    if buf[i] == b'e' || buf[i] == b'E' {
        float = true;
        i += 1;
        match buf.get(i) {
            None => return Err(NumberError::Incomplete),
            Some(b'+' | b'-') => i += 1,
            Some(_) => {}
        }
        i = digits(buf, i, "a digit must follow the exponent mark")?;
        if i == len && !eof {
            return Err(NumberError::Incomplete);
        }
    }
    if float {
        Ok((i, Number::Float))
    } else {
        Ok((i, int_form(negative, value, int_digits)))
    }
}

/// One or more digits from `buf[i]`; returns the index after them.
#[inline]
fn digits(buf: &[u8], mut i: usize, why: &'static str) -> Result<usize, NumberError> {
    match buf.get(i) {
        None => return Err(NumberError::Incomplete),
        Some(b) if b.is_ascii_digit() => i += 1,
        Some(_) => return Err(NumberError::Bad { at: i, why }),
    }
    while i < buf.len() && buf[i].is_ascii_digit() {
        i += 1;
    }
    Ok(i)
}

#[inline]
fn int_form(negative: bool, value: u64, digits: usize) -> Number {
    if digits <= 18 {
        // Below 10^18 < 2^63: exact.
        let v = value as i64;
        Number::Small(if negative { -v } else { v })
    } else {
        Number::Long
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_special_finds_the_first() {
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789";
        assert_eq!(find_special(text, 0), text.len());
        for at in 0..text.len() {
            for special in [b'"', b'\\', 0, 0x1f, b'\n'] {
                let mut t = text.to_vec();
                t[at] = special;
                // A later special must not hide the first.
                if at + 3 < t.len() {
                    t[at + 3] = b'"';
                }
                for from in 0..=at {
                    assert_eq!(find_special(&t, from), at, "{at} {special}");
                }
            }
        }
        // Bytes at or above 0x20 and non-ASCII are not special.
        let t = "é中😀 ~\u{7f}".as_bytes();
        assert_eq!(find_special(t, 0), t.len());
    }

    #[test]
    fn string_extent_follows_escapes() {
        assert_eq!(string_extent(b"ab\"cd", false), Ok(3));
        assert_eq!(string_extent(br#"a\"b"x"#, false), Ok(5));
        assert_eq!(string_extent(b"ab\\", false), Err(true));
        assert_eq!(string_extent(b"\"", true), Err(false));
        assert_eq!(string_extent(b"\"\"", true), Ok(2));
        assert_eq!(string_extent(b"", true), Err(true));
        assert_eq!(string_extent(br"\\", false), Err(false));
    }

    #[test]
    fn numbers_scan() {
        assert_eq!(scan_number(b"123,", 0, false), Ok((3, Number::Small(123))));
        assert_eq!(scan_number(b"-0]", 0, false), Ok((2, Number::Small(0))));
        assert_eq!(scan_number(b"123", 0, false), Err(NumberError::Incomplete));
        assert_eq!(scan_number(b"123", 0, true), Ok((3, Number::Small(123))));
        assert_eq!(scan_number(b"1.5e-3 ", 0, false), Ok((6, Number::Float)));
        assert_eq!(scan_number(b"1E3", 0, true), Ok((3, Number::Float)));
        assert_eq!(scan_number(b"1.", 0, true), Err(NumberError::Incomplete));
        assert_eq!(scan_number(b"1e+", 0, true), Err(NumberError::Incomplete));
        assert!(matches!(
            scan_number(b"1.]", 0, false),
            Err(NumberError::Bad { at: 2, .. })
        ));
        assert!(matches!(
            scan_number(b"01", 0, false),
            Err(NumberError::Bad { at: 0, .. })
        ));
        assert!(matches!(
            scan_number(b"-x", 0, false),
            Err(NumberError::Bad { at: 1, .. })
        ));
        assert_eq!(
            scan_number(b"999999999999999999,", 0, false),
            Ok((18, Number::Small(999_999_999_999_999_999)))
        );
        assert_eq!(
            scan_number(b"-1000000000000000000,", 0, false),
            Ok((20, Number::Long))
        );
    }
}
