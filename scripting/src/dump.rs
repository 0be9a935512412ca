//! The serialized form of function libraries: FUNCTION DUMP's payload and what FUNCTION RESTORE
//! reads.
//!
//! Redis writes the libraries as a fragment of its RDB format, so that is what clients hold and
//! hand back: for each library the function opcode (245) and the library's code as an RDB
//! string, then the RDB version (10, two bytes little-endian) and a CRC-64 (Jones polynomial,
//! reflected, little-endian) of everything before it. An RDB string is a length in RDB's variable
//! encoding followed by the bytes, or — for strings longer than 20 bytes when `rdbcompression` is
//! on, and only if it saves at least 4 bytes — LZF-compressed. The payload is meant to be
//! byte-identical to Redis's, so the LZF codec is `embedis_datatypes::lzf`, which reproduces
//! liblzf's choices; reading accepts any valid LZF stream and the integer encodings as well.
//!
//! Reading also knows the pre-release layout (opcode 246: name, engine, optional description,
//! code), which Redis turns into a library by giving the code a shebang.

/// RDB opcode of a function library (code only), Redis 7.0 GA.
pub const OPCODE_FUNCTION: u8 = 245;
/// RDB opcode of the pre-release function layout (name, engine, description, code).
pub const OPCODE_FUNCTION_PRE_GA: u8 = 246;
/// The RDB version Redis 7.0 writes.
pub const RDB_VERSION: u16 = 10;

/// The payload of `codes` (each a library's code), as FUNCTION DUMP replies it.
pub fn dump(codes: &[&[u8]], compress: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION);
        write_string(&mut out, code, compress);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Why a payload could not be read, as FUNCTION RESTORE says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, a newer RDB version, or a checksum mismatch.
    VersionOrChecksum,
    /// A fragment that is not a function library.
    NotAFunction,
    /// Any other reading failure: its reply line.
    Line(&'static str),
}

impl PayloadError {
    pub fn line(&self) -> &'static str {
        match self {
            PayloadError::VersionOrChecksum => "ERR DUMP payload version or checksum are wrong",
            PayloadError::NotAFunction => "ERR given type is not a function",
            PayloadError::Line(line) => line,
        }
    }
}

/// The libraries' codes in `payload`, in order. Pre-release entries come back with the shebang
/// Redis gives them.
pub fn read(payload: &[u8]) -> Result<Vec<Vec<u8>>, PayloadError> {
    if payload.len() < 10 {
        return Err(PayloadError::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(PayloadError::VersionOrChecksum);
    }
    let expected = u64::from_le_bytes(footer[2..].try_into().expect("8 bytes"));
    if crc64(0, &payload[..payload.len() - 8]) != expected {
        return Err(PayloadError::VersionOrChecksum);
    }
    let mut reader = Reader { data: body, at: 0 };
    let mut codes = Vec::new();
    while let Some(opcode) = reader.byte() {
        match opcode {
            OPCODE_FUNCTION => codes.push(
                reader
                    .string()
                    .ok_or(PayloadError::Line("ERR Failed loading library payload"))?,
            ),
            OPCODE_FUNCTION_PRE_GA => codes.push(read_pre_ga(&mut reader)?),
            _ => return Err(PayloadError::NotAFunction),
        }
    }
    Ok(codes)
}

fn read_pre_ga(reader: &mut Reader<'_>) -> Result<Vec<u8>, PayloadError> {
    let name = reader
        .string()
        .ok_or(PayloadError::Line("ERR Failed loading library name"))?;
    let engine = reader
        .string()
        .ok_or(PayloadError::Line("ERR Failed loading engine name"))?;
    let has_description = reader
        .length()
        .ok_or(PayloadError::Line("ERR Failed loading library blob"))?;
    if has_description != 0 {
        reader
            .string()
            .ok_or(PayloadError::Line("ERR Failed loading library description"))?;
    }
    let blob = reader
        .string()
        .ok_or(PayloadError::Line("ERR Failed loading library blob"))?;
    let mut code = b"#!".to_vec();
    code.extend_from_slice(&engine);
    code.extend_from_slice(b" name=");
    code.extend_from_slice(&name);
    code.push(b'\n');
    code.extend_from_slice(&blob);
    Ok(code)
}

/// A cursor over a payload's body.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let bytes = self.data.get(self.at..end)?;
        self.at = end;
        Some(bytes)
    }

    /// An RDB length, or an encoded-value marker (`Err` holds its kind).
    fn length_or_encoding(&mut self) -> Option<Result<u64, u8>> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Ok(u64::from(first & 0x3f)),
            1 => Ok((u64::from(first & 0x3f) << 8) | u64::from(self.byte()?)),
            2 => match first {
                0x80 => Ok(u64::from(u32::from_be_bytes(
                    self.take(4)?.try_into().ok()?,
                ))),
                0x81 => Ok(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
                _ => return None,
            },
            _ => Err(first & 0x3f),
        })
    }

    fn length(&mut self) -> Option<u64> {
        self.length_or_encoding()?.ok()
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        match self.length_or_encoding()? {
            Ok(len) => Some(self.take(usize::try_from(len).ok()?)?.to_vec()),
            Err(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Err(1) => Some(
                i16::from_le_bytes(self.take(2)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Err(2) => Some(
                i32::from_le_bytes(self.take(4)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Err(3) => {
                let compressed = usize::try_from(self.length()?).ok()?;
                let original = usize::try_from(self.length()?).ok()?;
                let data = self.take(compressed)?;
                embedis_datatypes::lzf::decompress(data, original)
            }
            Err(_) => None,
        }
    }
}

/// Appends `len` in RDB's length encoding.
fn write_length(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Appends `s` as an RDB string: LZF-compressed when allowed, longer than 20 bytes and at least
/// 4 bytes shorter compressed; raw otherwise. (Library code starts with `#!`, so Redis's integer
/// encoding of short numeric strings never applies.)
fn write_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if compress && s.len() > 20 {
        if let Some(packed) = embedis_datatypes::lzf::compress(s, s.len() - 4) {
            out.push(0xc3);
            write_length(out, packed.len() as u64);
            write_length(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    write_length(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// CRC-64 as Redis computes it (Jones polynomial, reflected in and out, no final xor).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    const TABLE: [u64; 256] = crc64_table();
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

const fn crc64_table() -> [u64; 256] {
    // The Jones polynomial 0xad93d23594c935a9, bit-reversed for the reflected algorithm.
    const REFLECTED: u64 = 0x95ac9329ac4bc9b5;
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6d914c4b8d9ca);
    }

    #[test]
    fn empty_dump_is_version_and_checksum() {
        // Observed on redis-server 7.0.15: FUNCTION DUMP with no libraries.
        assert_eq!(dump(&[], true), b"\n\x00]\x9b\\@\x0f\x7f\xa2\xda");
    }

    #[test]
    fn uncompressible_code_is_stored_raw() {
        // Observed on redis-server 7.0.15.
        let code = b"#!lua name=lib1\nredis.register_function('f1', function() return 1 end)";
        let mut expected = b"\xf5@F".to_vec();
        expected.extend_from_slice(code);
        expected.extend_from_slice(b"\n\x00\x98\xfaC\x9b\xf0\xa7\xa5\xa2");
        assert_eq!(dump(&[code], true), expected);
    }

    #[test]
    fn compressed_code_matches_redis() {
        // Observed on redis-server 7.0.15.
        let code = b"#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return {keys, args} end)\nredis.register_function{function_name='ro', callback=function(k,a) return redis.call('get', k[1]) end, flags={'no-writes'}, description='a reader'}";
        let expected: &[u8] = b"\xf5\xc3@\xbd@\xf4\x1f#!lua name=mylib\nredis.register_\x0bfunction('my@\x0b\x02', @\x06`\x12\x13keys, args) return {\xe0\x01\x13\x05} end)\xe0\x0fO\x00{\xc0E\x00_`{\x02'ro Y\x08callback=\xc0\x1c\x03(k,a\xe0\x00[\x80\x99@#\x04('get /\x04k[1])@f \x94\x1alags={'no-writes'}, descrip@\xac\x02='a @\x05ader'}\n\x00\x9b\"\t\x05\xcb\x87\xdca";
        assert_eq!(dump(&[code], true), expected);
        assert_eq!(read(expected).unwrap(), vec![code.to_vec()]);
    }

    #[test]
    fn round_trips_and_refusals() {
        let codes: Vec<Vec<u8>> = vec![
            b"#!lua name=a\n".repeat(40),
            b"#!lua name=b\nshort".to_vec(),
        ];
        let refs: Vec<&[u8]> = codes.iter().map(|c| c.as_slice()).collect();
        for compress in [false, true] {
            let payload = dump(&refs, compress);
            assert_eq!(read(&payload).unwrap(), codes);
            let mut bad = payload.clone();
            bad[3] ^= 1;
            assert_eq!(read(&bad), Err(PayloadError::VersionOrChecksum));
        }
        assert_eq!(read(b"short"), Err(PayloadError::VersionOrChecksum));
        let mut junk = vec![7u8];
        junk.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(0, &junk);
        junk.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(read(&junk), Err(PayloadError::NotAFunction));
    }
}
