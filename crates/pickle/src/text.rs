//! Decoding of the text arguments of protocol 0 opcodes and of pickle's integer forms.

/// An integer as a decoder found it: small enough for `i64`, or little-endian
/// two's-complement bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Int {
    /// Fits in `i64`.
    Small(i64),
    /// Does not; minimal little-endian two's-complement bytes.
    Big(Vec<u8>),
}

/// CPython refuses to convert decimal strings longer than this to `int` (its default
/// `sys.int_info.str_digits_check_threshold`), which also bounds the quadratic work below.
pub const MAX_DECIMAL_DIGITS: usize = 4300;

/// Decodes little-endian two's-complement bytes (pickle `LONG1`/`LONG4`).
pub fn int_from_le(bytes: &[u8]) -> Int {
    let minimal = minimal_le(bytes);
    if minimal.len() <= 8 {
        let negative = minimal.last().is_some_and(|b| b & 0x80 != 0);
        let mut buf = if negative { [0xff; 8] } else { [0; 8] };
        buf[..minimal.len()].copy_from_slice(minimal);
        Int::Small(i64::from_le_bytes(buf))
    } else {
        Int::Big(minimal.to_vec())
    }
}

/// Strips redundant sign-extension bytes.
fn minimal_le(bytes: &[u8]) -> &[u8] {
    let mut len = bytes.len();
    while len > 1 {
        let top = bytes[len - 1];
        let next_sign = bytes[len - 2] & 0x80;
        if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
            len -= 1;
        } else {
            break;
        }
    }
    &bytes[..len]
}

/// Parses an optionally signed decimal integer (surrounding ASCII blanks allowed, as
/// Python's `int()` allows them). Returns `None` when it is not one.
pub fn parse_decimal(text: &[u8]) -> Option<Int> {
    let text = text.trim_ascii();
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty()
        || digits.len() > MAX_DECIMAL_DIGITS
        || !digits.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    if digits.len() <= 18 {
        let mut value: i64 = 0;
        for d in digits {
            value = value * 10 + i64::from(d - b'0');
        }
        return Some(Int::Small(if negative { -value } else { value }));
    }
    // Magnitude in base 2^32 limbs, little-endian.
    let mut limbs: Vec<u32> = vec![0];
    for d in digits {
        let mut carry = u64::from(d - b'0');
        for limb in &mut limbs {
            let v = u64::from(*limb) * 10 + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            limbs.push(carry as u32);
        }
    }
    let mut bytes: Vec<u8> = limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
    bytes.push(0); // room for the sign bit
    if negative {
        // Two's complement: invert and add one.
        let mut carry = true;
        for b in &mut bytes {
            *b = !*b;
            if carry {
                let (v, overflow) = b.overflowing_add(1);
                *b = v;
                carry = overflow;
            }
        }
    }
    Some(int_from_le(&bytes))
}

/// Parses a Python float literal as `repr()` writes it (`1.5`, `1e+300`, `inf`, `nan`).
pub fn parse_float(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

/// Decodes the argument of the `STRING` opcode: a quoted Python 2 string literal with
/// backslash escapes (CPython: `codecs.escape_decode`). Returns `None` if unquoted.
pub fn decode_string_literal(line: &[u8]) -> Option<Vec<u8>> {
    let quoted =
        line.len() >= 2 && line[0] == line[line.len() - 1] && (line[0] == b'\'' || line[0] == b'"');
    if !quoted {
        return None;
    }
    let body = &line[1..line.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        i += 1;
        if c != b'\\' || i == body.len() {
            out.push(c);
            continue;
        }
        let e = body[i];
        i += 1;
        match e {
            b'\n' => {}
            b'\\' | b'\'' | b'"' => out.push(e),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'0'..=b'7' => {
                let mut value = u32::from(e - b'0');
                for _ in 0..2 {
                    match body.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(value as u8);
            }
            b'x' => {
                let hex = body.get(i..i + 2)?;
                let value = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                out.push(value);
                i += 2;
            }
            _ => {
                out.push(b'\\');
                out.push(e);
            }
        }
    }
    Some(out)
}

/// Decodes the argument of the `UNICODE` opcode (CPython's `raw-unicode-escape`): bytes
/// are Latin-1 code points, except `\uXXXX` and `\UXXXXXXXX` after an odd number of
/// backslashes. Lone surrogates, which Rust strings cannot hold, become U+FFFD.
pub fn decode_raw_unicode_escape(bytes: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c != b'\\' {
            out.push(char::from(c));
            i += 1;
            continue;
        }
        let run_start = i;
        while i < bytes.len() && bytes[i] == b'\\' {
            out.push('\\');
            i += 1;
        }
        let odd = (i - run_start) % 2 == 1;
        let count = match bytes.get(i) {
            Some(b'u') if odd => 4,
            Some(b'U') if odd => 8,
            _ => continue,
        };
        out.pop(); // the escaping backslash
        let hex = bytes.get(i + 1..i + 1 + count)?;
        let value = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
        if value > 0x10_FFFF {
            return None;
        }
        out.push(char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER));
        i += 1 + count;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn le_ints_decode_like_cpython() {
        // Values checked against Python's int.from_bytes(b, 'little', signed=True).
        assert_eq!(int_from_le(&[]), Int::Small(0));
        assert_eq!(int_from_le(&[0xff]), Int::Small(-1));
        assert_eq!(int_from_le(&[0x00, 0x80]), Int::Small(-32768));
        assert_eq!(
            int_from_le(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
            Int::Small(i64::MAX)
        );
        // 2**64 - 1 is 9 bytes: ff*8 then 00.
        assert_eq!(
            int_from_le(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]),
            Int::Big(vec![0xff; 8].into_iter().chain([0]).collect())
        );
        // Redundant sign bytes are dropped: 5 as 16 bytes is still small.
        let mut five = vec![5u8];
        five.extend([0; 15]);
        assert_eq!(int_from_le(&five), Int::Small(5));
    }

    #[test]
    fn decimals_match_le_encoding() {
        assert_eq!(parse_decimal(b"  -42\n"), Some(Int::Small(-42)));
        assert_eq!(parse_decimal(b"12a"), None);
        assert_eq!(parse_decimal(b""), None);
        // 2**64 - 1 and -2**70, encodings from Python's int.to_bytes(..., signed=True).
        assert_eq!(
            parse_decimal(b"18446744073709551615"),
            Some(Int::Big([0xff; 8].into_iter().chain([0]).collect()))
        );
        assert_eq!(
            parse_decimal(b"-1180591620717411303424"),
            Some(Int::Big(vec![0, 0, 0, 0, 0, 0, 0, 0, 0xc0]))
        );
        assert_eq!(
            parse_decimal(b"-9223372036854775808"),
            Some(Int::Small(i64::MIN))
        );
        assert_eq!(parse_decimal(&[b'1'; MAX_DECIMAL_DIGITS + 1]), None);
    }

    #[test]
    fn string_literals_unescape() {
        assert_eq!(
            decode_string_literal(br"'a\'b\\c\x41\101\n'").as_deref(),
            Some(&b"a'b\\cAA\n"[..])
        );
        assert_eq!(decode_string_literal(b"abc"), None);
    }

    #[test]
    fn raw_unicode_escape_decodes() {
        assert_eq!(
            decode_raw_unicode_escape(b"caf\xe9 \\u20ac \\\\u0041 \\U0001f600").as_deref(),
            Some("café € \\\\u0041 😀")
        );
        assert_eq!(decode_raw_unicode_escape(b"\\u12"), None);
    }
}
