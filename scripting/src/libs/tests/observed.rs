//! What redis-server 7.0.15 printed for each case, run under the tests' printer prelude (see
//! `PRELUDE` in the parent module): `(function body, printed results)`. Recorded through EVAL;
//! the generator also starts each random-number case with `math.randomseed`, since Redis's
//! generator state carries over from script to script.

pub(crate) const BIT: &[(&str, &str)] = &[
    (
        r"return bit.tobit(2^32+1), bit.tobit(0.5), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-0.5), bit.tobit(-1.5), bit.tobit(3.5)",
        r"1 0 2 2 0 -2 4",
    ),
    (
        r"return bit.tobit(-1), bit.tobit(2^31), bit.tobit(-2^31-1), bit.tobit(1e300), bit.tobit(0/0), bit.tobit(1/0), bit.tobit(-1/0)",
        r"-1 -2147483648 2147483647 -2013235812 0 0 0",
    ),
    (
        r"return bit.tobit('0x10'), bit.tobit(' 12 '), bit.tobit(2^52), bit.tobit(2^53+3), bit.tobit(-2^53), bit.tobit(0xffffffff)",
        r"16 12 0 2 0 -1",
    ),
    (
        r"return bit.tohex(255), bit.tohex(255, -4), bit.tohex(-1), bit.tohex(1, 2), bit.tohex(0x12345678, 0), bit.tohex(1, 100), bit.tohex(1, -100), bit.tohex(-1, 9)",
        r#""000000ff" "00FF" "ffffffff" "01" "" "00000001" "00000001" "ffffffff""#,
    ),
    (
        r"return bit.tohex(1, 2.9), bit.tohex(0xabcdef, -6), bit.tohex(2^32+255), bit.tohex('255')",
        r#""001" "ABCDEF" "000000ff" "000000ff""#,
    ),
    (
        r"return bit.bnot(0), bit.bnot(-1), bit.bnot(0x12345678), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(1, 3, 7), bit.band(5), bit.bor(-1), bit.bxor(0)",
        r"-1 0 -305419897 3 7 5 5 -1 0",
    ),
    (
        r"return bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(1, -1), bit.rshift(-1, 1), bit.rshift(-1, 0), bit.arshift(-256, 4), bit.arshift(256, 4), bit.arshift(-1, 31)",
        r"-2147483648 1 2 -2147483648 2147483647 -1 -16 16 -1",
    ),
    (
        r"return bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.rol(1, 0), bit.ror(1, 32), bit.rol(-1, 5), bit.bswap(0x12345678), bit.bswap(-1), bit.bswap(1)",
        r"878082066 2014458966 1 1 -1 2018915346 -1 16777216",
    ),
    (
        r"return bit.tobit()",
        r"ERR user_script:1: bad argument #1 to 'tobit' (number expected, got no value)",
    ),
    (
        r"return bit.tohex()",
        r"ERR user_script:1: bad argument #1 to 'tohex' (number expected, got no value)",
    ),
    (
        r"return bit.tohex(1, 'x')",
        r"ERR user_script:1: bad argument #2 to 'tohex' (number expected, got string)",
    ),
    (
        r"return bit.tohex(1, nil)",
        r"ERR user_script:1: bad argument #2 to 'tohex' (number expected, got nil)",
    ),
    (
        r"return bit.band()",
        r"ERR user_script:1: bad argument #1 to 'band' (number expected, got no value)",
    ),
    (
        r"return bit.band('x')",
        r"ERR user_script:1: bad argument #1 to 'band' (number expected, got string)",
    ),
    (
        r"return bit.band(1, 'x')",
        r"ERR user_script:1: bad argument #2 to 'band' (number expected, got string)",
    ),
    (
        r"return bit.band(1, nil)",
        r"ERR user_script:1: bad argument #2 to 'band' (number expected, got nil)",
    ),
    (
        r"return bit.bor(1, 'a', 'b')",
        r"ERR user_script:1: bad argument #3 to 'bor' (number expected, got string)",
    ),
    (
        r"return bit.bxor({}, 2)",
        r"ERR user_script:1: bad argument #1 to 'bxor' (number expected, got table)",
    ),
    (
        r"return bit.lshift(1)",
        r"ERR user_script:1: bad argument #2 to 'lshift' (number expected, got no value)",
    ),
    (
        r"return bit.rol()",
        r"ERR user_script:1: bad argument #1 to 'rol' (number expected, got no value)",
    ),
    (
        r"return bit.bswap(true)",
        r"ERR user_script:1: bad argument #1 to 'bswap' (number expected, got boolean)",
    ),
    (
        r"return bit.tobit('0'), bit.tobit('abc' == 'x' and 1 or 0)",
        r"0 0",
    ),
    (
        r"local ok, e = pcall(bit.band, 1, {}) return e",
        r#""bad argument #2 to '?' (number expected, got table)""#,
    ),
    (
        r"local f = bit.bnot return f('z')",
        r"ERR user_script:1: bad argument #1 to 'f' (number expected, got string)",
    ),
    (
        r"local t = {} for k in pairs(bit) do t[#t + 1] = k end table.sort(t) return table.concat(t, ' ')",
        r#""arshift band bnot bor bswap bxor lshift rol ror rshift tobit tohex""#,
    ),
];

pub(crate) const STRUCT: &[(&str, &str)] = &[
    (
        r"return struct.pack('>I2', 258), struct.pack('<I2', 258), struct.pack('<i10', -1), struct.pack('>I8', 2^64), struct.pack('>i8', 0/0), struct.pack('>I4', 0/0)",
        r#""\x01\x02" "\x02\x01" "\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "\x80\x00\x00\x00\x00\x00\x00\x00" "\x00\x00\x00\x00""#,
    ),
    (
        r"return struct.pack('<b', 300), struct.pack('<h', -2), struct.pack('>d', 1.5), struct.pack('<f', 0.1), struct.pack('>f', -2.5), struct.pack('<d', 1/0)",
        r#""," "\xfe\xff" "?\xf8\x00\x00\x00\x00\x00\x00" "\xcd\xcc\xcc=" "\xc0 \x00\x00" "\x00\x00\x00\x00\x00\x00\xf0\x7f""#,
    ),
    (
        r"return struct.pack('!4 b i', 1, 2), struct.pack('s', 'ab\0c'), struct.pack('c0', 'xyz'), struct.pack('bxb', 1, 2), struct.pack('!2bh', 1, 2), struct.pack('>!8bd', 1, 2)",
        r#""\x01\x00\x00\x00\x02\x00\x00\x00" "ab\x00c\x00" "xyz" "\x01\x00\x02" "\x01\x00\x02\x00" "\x01\x00\x00\x00\x00\x00\x00\x00@\x00\x00\x00\x00\x00\x00\x00""#,
    ),
    (
        r"return struct.pack('T', 5), struct.pack('lL', -1, 1), struct.pack('<I3', 0x123456), struct.pack('>i3', -2), struct.pack('c3', 'abcdef'), struct.pack('>I1', 255)",
        r#""\x05\x00\x00\x00\x00\x00\x00\x00" "\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00\x00\x00\x00\x00\x00" "V4\x12" "\xff\xff\xfe" "abc" "\xff""#,
    ),
    (
        r"return struct.pack('!bxi', 1, 2), struct.pack('!8 b d', 1, 2), struct.pack('!1 b i', 1, 2), struct.pack('! b h', 1, 2), struct.pack('<!4 b I2 b I8', 1, 2, 3, 4)",
        r#""\x01\x00\x00\x00\x02\x00\x00\x00" "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@" "\x01\x02\x00\x00\x00" "\x01\x00\x02\x00" "\x01\x00\x02\x00\x03\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00""#,
    ),
    (
        r"return struct.pack('>I8', -1), struct.pack('>I8', 2^63), struct.pack('>i8', -2^63-5000), struct.pack('>i8', 2^70), struct.pack('<I9', -1), struct.pack('<i32', -2)",
        r#""\xff\xff\xff\xff\xff\xff\xff\xff" "\x80\x00\x00\x00\x00\x00\x00\x00" "\x80\x00\x00\x00\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "\xff\xff\xff\xff\xff\xff\xff\xff\x00" "\xfe\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00""#,
    ),
    (
        r"return struct.pack(''), struct.pack('i\0i', 1, 2), struct.pack('>i', '12'), struct.pack('s', 123), struct.pack('b', 1.9), struct.pack('b', -1.9)",
        r#""" "\x01\x00\x00\x00" "\x00\x00\x00\x0c" "123\x00" "\x01" "\xff""#,
    ),
    (
        r"return struct.pack('ii', 1)",
        r"ERR user_script:1: bad argument #3 to 'pack' (number expected, got nil)",
    ),
    (
        r"return struct.pack('i')",
        r"ERR user_script:1: bad argument #2 to 'pack' (number expected, got nil)",
    ),
    (
        r"return struct.pack('c2', 'a')",
        r"ERR user_script:1: bad argument #3 to 'pack' (string too short)",
    ),
    (
        r"return struct.pack('!3')",
        r"ERR user_script:1: alignment 3 is not a power of 2",
    ),
    (
        r"return struct.pack('i33')",
        r"ERR user_script:1: integral size 33 is larger than limit of 32",
    ),
    (
        r"return struct.pack('i99999999999')",
        r"ERR user_script:1: integral size overflow",
    ),
    (
        r"return struct.pack('y', 1)",
        r"ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'y')",
    ),
    (
        r"return struct.pack()",
        r"ERR user_script:1: bad argument #1 to 'pack' (string expected, got no value)",
    ),
    (
        r"return struct.pack('s')",
        r"ERR user_script:1: bad argument #2 to 'pack' (string expected, got nil)",
    ),
    (
        r"return struct.pack('d', 'x')",
        r"ERR user_script:1: bad argument #2 to 'pack' (number expected, got string)",
    ),
    (
        r"return struct.pack({})",
        r"ERR user_script:1: bad argument #1 to 'pack' (string expected, got table)",
    ),
    (
        r"return struct.size('s')",
        r"ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)",
    ),
    (
        r"return struct.size('c0')",
        r"ERR user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)",
    ),
    (
        r"return struct.size('y'), struct.size('!8bd'), struct.size('bhilTfdc5x'), struct.size('i3'), struct.size(''), struct.size('!4 b i b'), struct.size('<>!c2')",
        r"0 16 41 3 0 9 2",
    ),
    (
        r"return struct.size('?')",
        r"ERR user_script:1: bad argument #1 to 'size' (invalid format option '?')",
    ),
    (
        r"return struct.size('i40')",
        r"ERR user_script:1: integral size 40 is larger than limit of 32",
    ),
    (
        r"return struct.unpack('>I2', 'ab'), struct.unpack('<i2', '\255\255'), struct.unpack('bc0', '\3abcd')",
        r#"24930 -1 "abc" 5"#,
    ),
    (
        r"return struct.unpack('s', 'ab\0cd'), struct.unpack('i3', 'abcd', 2), struct.unpack('<i9', '\255\255\255\255\255\255\255\255\255')",
        r#""ab" 6579042 -1 10"#,
    ),
    (
        r"return struct.unpack('<I9', '\1\0\0\0\0\0\0\0\2'), struct.unpack('>I1', '\200'), struct.unpack('>i1', '\200')",
        r"1 200 -56 2",
    ),
    (
        r"return struct.unpack('>d', struct.pack('>d', 0.1)), struct.unpack('<f', struct.pack('<f', 0.1)), struct.unpack('!4 b i', struct.pack('!4 b i', 7, -9))",
        r"0.10000000000000001 0.10000000149011612 7 -9 9",
    ),
    (
        r"return struct.unpack('c2 c1 x s', 'abcd\0ef\0'), struct.unpack('', 'abc', 3), struct.unpack('b', 'abc', 3)",
        r#""ab" 3 99 4"#,
    ),
    (
        r"return struct.unpack('<I8', '\255\255\255\255\255\255\255\255'), struct.unpack('<i8', '\0\0\0\0\0\0\0\128'), struct.unpack('>l', '\0\0\0\0\0\0\1\0')",
        r"1.8446744073709552e+19 -9.2233720368547758e+18 256 9",
    ),
    (
        r"return struct.unpack('i4', 'abc')",
        r"ERR user_script:1: bad argument #2 to 'unpack' (data string too short)",
    ),
    (
        r"return struct.unpack('i', 'abcd', 0)",
        r"ERR user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)",
    ),
    (
        r"return struct.unpack('i', 'abcd', 6)",
        r"ERR user_script:1: bad argument #2 to 'unpack' (data string too short)",
    ),
    (
        r"return struct.unpack('i', 'abcd', -1)",
        r"ERR user_script:1: bad argument #2 to 'unpack' (data string too short)",
    ),
    (
        r"return struct.unpack('c0', 'abcd')",
        r"ERR user_script:1: format 'c0' needs a previous size",
    ),
    (
        r"return struct.unpack('s', 'abcd')",
        r"ERR user_script:1: unfinished string in data",
    ),
    (
        r"return struct.unpack('bc0', '\9abcd')",
        r"ERR user_script:1: bad argument #2 to 'unpack' (data string too short)",
    ),
    (
        r"return struct.unpack('i', 'abcd', 5)",
        r"ERR user_script:1: bad argument #2 to 'unpack' (data string too short)",
    ),
    (
        r"return struct.unpack('i')",
        r"ERR user_script:1: bad argument #2 to 'unpack' (string expected, got no value)",
    ),
    (
        r"return struct.unpack(12, '\0\0\0\0\0\0\0\0\0\0\0\0\0\0')",
        r"ERR user_script:1: bad argument #1 to 'unpack' (invalid format option '1')",
    ),
    (
        r"return struct.unpack('z', 'abcd')",
        r"ERR user_script:1: bad argument #1 to 'unpack' (invalid format option 'z')",
    ),
    (
        r"return struct.unpack('i', 'abcd', 'x')",
        r"ERR user_script:1: bad argument #3 to 'unpack' (number expected, got string)",
    ),
    (
        r"return struct.unpack('c0', '\3abc')",
        r"ERR user_script:1: format 'c0' needs a previous size",
    ),
    (r"return struct.unpack('sc0', '3\0abc')", r#""abc" 6"#),
    (
        r"return #{struct.unpack(string.rep('b', 7997), string.rep('a', 7997))}",
        r"7998",
    ),
    (
        r"return #{struct.unpack(string.rep('b', 7998), string.rep('a', 7998))}",
        r"ERR user_script:1: stack overflow (too many results)",
    ),
    (
        r"return struct.unpack('b', 'a', nil), struct.unpack('bxx', 'abc', 1, 'extra')",
        r"97 97 4",
    ),
    (
        r"local ok, e = pcall(struct.pack, '!0 b i', 1, 2) return ok, e, pcall(struct.size, '!0'), pcall(struct.unpack, '!0 b', 'a')",
        r#"false "alignment 0 is not a power of 2" false false "alignment 0 is not a power of 2""#,
    ),
    (
        r"return struct.pack('!16 b d', 1, 2), struct.size('!16 b d'), struct.size('!1 b d'), struct.size('! b h i l d')",
        r#""\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@" 16 9 24"#,
    ),
];

pub(crate) const RAND: &[(&str, &str)] = &[
    (
        r"math.randomseed(0) return math.random(), math.random(), math.random(100), math.random(-5, 5), math.random(1, 1)",
        r"0.1708280361121651 0.74990198051086721 10 4 1",
    ),
    (
        r"math.randomseed(1) return math.random(10), math.random(5, 100), math.random(1000000)",
        r"1 48 834818",
    ),
    (
        r"math.randomseed(7) return math.random(), math.random(3, 4)",
        r"0.26644419658297869 4",
    ),
    (
        r"math.randomseed(2^32 + 7) return math.random()",
        r"0.26644419658297869",
    ),
    (
        r"math.randomseed(-1) return math.random(), math.random(1, 2^31 - 1)",
        r"0.3000257272739083 97305741",
    ),
    (
        r"math.randomseed(42) return math.random(), math.random(100)",
        r"0.74452500033403046 35",
    ),
    (
        r"math.randomseed(3.9) return math.random()",
        r"0.7832349621612742",
    ),
    (
        r"math.randomseed(123456789) local t = {} for i = 1, 20 do t[i] = math.random(6) end return table.concat(t, ',')",
        r#""1,1,1,3,2,5,4,1,6,4,2,5,5,4,5,1,4,1,5,1""#,
    ),
    (
        r"math.randomseed(5) return math.random(2.9), math.random(-2^31, 2^31 - 1), math.random(-3, -1)",
        r"2 -2147483648 -1",
    ),
    (
        r"return math.random(0)",
        r"ERR user_script:1: bad argument #1 to 'random' (interval is empty)",
    ),
    (
        r"return math.random(2^31 + 5)",
        r"ERR user_script:1: bad argument #1 to 'random' (interval is empty)",
    ),
    (
        r"return math.random(3, 2)",
        r"ERR user_script:1: bad argument #2 to 'random' (interval is empty)",
    ),
    (
        r"return math.random(1, 2, 3)",
        r"ERR user_script:1: wrong number of arguments",
    ),
    (
        r"return math.randomseed()",
        r"ERR user_script:1: bad argument #1 to 'randomseed' (number expected, got no value)",
    ),
    (
        r"return math.random('x')",
        r"ERR user_script:1: bad argument #1 to 'random' (number expected, got string)",
    ),
    (
        r"return math.random(1, {})",
        r"ERR user_script:1: bad argument #2 to 'random' (number expected, got table)",
    ),
    (r"return math.randomseed('5'), math.random(1, 1)", r"nil 1"),
];

pub(crate) const CJSON: &[(&str, &str)] = &[
    (
        r"return cjson.encode({1, 2, 3}), cjson.encode({}), cjson.encode({{{}}}), cjson.encode({a = 1}), cjson.encode('x'), cjson.encode(true), cjson.encode(nil)",
        r#""[1,2,3]" "{}" "[[{}]]" "{\"a\":1}" "\"x\"" "true" "null""#,
    ),
    (
        r"return cjson.encode({1e15, 123456789012345, 0.1, -0.0, 1/3, 1e-7, 2^53, 100, 12345678901234567, 0.1 + 0.2, -1.5e-300, 5e-324, 123456.7890123456})",
        r#""[1e+15,1.2345678901234e+14,0.1,-0,0.33333333333333,1e-07,9.007199254741e+15,100,1.2345678901235e+16,0.3,-1.5e-300,4.9406564584125e-324,123456.78901235]""#,
    ),
    (
        r"return cjson.encode({1e14, 1e-4, 1e-5, 99999999999999, 999999999999999, -123.456, 2^63, -2^63, 1e308})",
        r#""[1e+14,0.0001,1e-05,99999999999999,1e+15,-123.456,9.2233720368548e+18,-9.2233720368548e+18,1e+308]""#,
    ),
    (
        r#"return cjson.encode('a/b"c\\d\0\1\8\9\10\11\12\13\31\127\128\255 \233')"#,
        r#""\"a\\/b\\\"c\\\\d\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\\u007f\x80\xff \xe9\"""#,
    ),
    (
        r"return cjson.encode({[1.5] = 1}), cjson.encode({[-1] = 1}), cjson.encode({[0] = 1}), cjson.encode({[1] = 1, [2] = 2, x = 3})",
        r#""{\"1.5\":1}" "{\"-1\":1}" "{\"0\":1}" "{\"1\":1,\"2\":2,\"x\":3}""#,
    ),
    (
        r"return cjson.encode(cjson.null), cjson.encode({cjson.null, true, false}), cjson.encode({1, 2, nil, 4})",
        r#""null" "[null,true,false]" "[1,2,null,4]""#,
    ),
    (
        r"local t = {} t[10] = 1 return cjson.encode(t)",
        r#""[null,null,null,null,null,null,null,null,null,1]""#,
    ),
    (
        r"local t = {1, 2, 3} t[7] = 1 return cjson.encode(t)",
        r#""[1,2,3,null,null,null,1]""#,
    ),
    (
        r"local t = {} t[2^40] = 1 local u = {} u[2^31] = 1 return cjson.encode(t), cjson.encode(u)",
        r#""{\"1099511627776\":1}" "{\"2147483648\":1}""#,
    ),
    (
        r"local t = {} for i = 1, 20 do t['k' .. i] = i end return cjson.encode(t)",
        r#""{\"k16\":16,\"k19\":19,\"k11\":11,\"k17\":17,\"k15\":15,\"k20\":20,\"k10\":10,\"k8\":8,\"k1\":1,\"k12\":12,\"k3\":3,\"k2\":2,\"k9\":9,\"k13\":13,\"k18\":18,\"k14\":14,\"k6\":6,\"k7\":7,\"k4\":4,\"k5\":5}""#,
    ),
    (
        r"local t = {x = {1, {y = 'z'}}, [5] = false} return cjson.encode(t)",
        r#""{\"5\":false,\"x\":[1,{\"y\":\"z\"}]}""#,
    ),
    (
        r"local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end return #cjson.encode(t)",
        r"2000",
    ),
    (
        r"return cjson.encode({1, 2, 3, nil, nil, nil, nil, nil, nil, nil, nil, 12})",
        r"ERR user_script:1: Cannot serialise table: excessively sparse array",
    ),
    (
        r"local t = {} t[11] = 1 return cjson.encode(t)",
        r"ERR user_script:1: Cannot serialise table: excessively sparse array",
    ),
    (
        r"local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return cjson.encode(t)",
        r"ERR user_script:1: Cannot serialise, excessive nesting (1001)",
    ),
    (
        r"local t = {} t.a = t return cjson.encode(t)",
        r"ERR user_script:1: Cannot serialise, excessive nesting (1001)",
    ),
    (
        r"return cjson.encode(function() end)",
        r"ERR user_script:1: Cannot serialise function: type not supported",
    ),
    (
        r"return cjson.encode({[true] = 1})",
        r"ERR user_script:1: Cannot serialise boolean: table key must be a number or string",
    ),
    (
        r"return cjson.encode({[{}] = 1})",
        r"ERR user_script:1: Cannot serialise table: table key must be a number or string",
    ),
    (
        r"return cjson.encode(0/0)",
        r"ERR user_script:1: Cannot serialise number: must not be NaN or Inf",
    ),
    (
        r"return cjson.encode(1/0)",
        r"ERR user_script:1: Cannot serialise number: must not be NaN or Inf",
    ),
    (
        r"return cjson.encode({x = -1/0})",
        r"ERR user_script:1: Cannot serialise number: must not be NaN or Inf",
    ),
    (
        r"return cjson.encode({[1/0] = 1})",
        r"ERR user_script:1: Cannot serialise number: must not be NaN or Inf",
    ),
    (
        r"return cjson.encode({1, 2, x = function() end})",
        r"ERR user_script:1: Cannot serialise function: type not supported",
    ),
    (
        r"return cjson.encode({a = {b = coroutine.create(function() end)}})",
        r"ERR user_script:1: Cannot serialise thread: type not supported",
    ),
    (
        r"return cjson.encode()",
        r"ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument)",
    ),
    (
        r"return cjson.encode(1, 2)",
        r"ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument)",
    ),
    (
        r#"return cjson.decode('{"a":[1,2,{"b":null}],"c":"x\\u00e9\\ud83d\\ude00"}')"#,
        r#"{"a"={1=1,2=2,3={"b"=null}},"c"="x\xc3\xa9\xf0\x9f\x98\x80"}"#,
    ),
    (
        r#"return cjson.decode('[1,null,3]'), cjson.decode('null'), cjson.decode('true'), cjson.decode('false'), cjson.decode('"x"'), cjson.decode('  7  ')"#,
        r#"{1=1,2=null,3=3} null true false "x" 7"#,
    ),
    (
        r#"return cjson.decode('"\\/\\b\\f\\n\\r\\t\\"\\\\"'), cjson.decode('"\\u0000\\u0041\\u07ff\\uffff\\u0800"'), cjson.decode('"a\1b\10\255"')"#,
        r#""/\x08\x0c\x0a\x0d\x09\"\\" "\x00A\xdf\xbf\xef\xbf\xbf\xe0\xa0\x80" "a\x01b\x0a\xff""#,
    ),
    (
        r"return cjson.decode('01'), cjson.decode('+1'), cjson.decode('0x10'), cjson.decode('nan'), cjson.decode('-inf'), cjson.decode('Infinity'), cjson.decode('1e2'), cjson.decode('-0')",
        r"1 1 16 nan -inf inf 100 -0",
    ),
    (
        r"return cjson.decode('INF'), cjson.decode('NaN'), cjson.decode('-0x1p4'), cjson.decode('1.5e-3'), cjson.decode('.5'), cjson.decode('5.'), cjson.decode('1E+2'), cjson.decode('123456789012345678901234567890')",
        r"ERR user_script:1: Expected value but found invalid token at character 1",
    ),
    (
        r#"return cjson.decode('[1]\0xx'), cjson.decode(123), cjson.decode('{"a":1,"a":2}'), cjson.decode('[]'), cjson.decode('{}'), cjson.decode('[[],{}]')"#,
        r#"{1=1} 123 {"a"=2} {} {} {1={},2={}}"#,
    ),
    (
        r#"return cjson.decode('{"b":2,"a":1,"c":{"d":[true,false]}}')"#,
        r#"{"a"=1,"c"={"d"={1=true,2=false}},"b"=2}"#,
    ),
    (
        r"return #cjson.decode(string.rep('[', 999) .. string.rep(']', 999))",
        r"1",
    ),
    (
        r"return cjson.decode('[')",
        r"ERR user_script:1: Expected value but found T_END at character 2",
    ),
    (
        r#"return cjson.decode('"\\ud83d"')"#,
        r"ERR user_script:1: Expected value but found invalid unicode escape code at character 2",
    ),
    (
        r#"return cjson.decode('"\\ude00"')"#,
        r"ERR user_script:1: Expected value but found invalid unicode escape code at character 2",
    ),
    (
        r#"return cjson.decode('"\\ud83d\\u0041"')"#,
        r"ERR user_script:1: Expected value but found invalid unicode escape code at character 2",
    ),
    (
        r#"return cjson.decode('"\\u12"')"#,
        r"ERR user_script:1: Expected value but found invalid unicode escape code at character 2",
    ),
    (
        r#"return cjson.decode('"\\x"')"#,
        r"ERR user_script:1: Expected value but found invalid escape code at character 2",
    ),
    (
        r#"return cjson.decode('"abc')"#,
        r"ERR user_script:1: Expected value but found unexpected end of string at character 5",
    ),
    (
        r"return cjson.decode('[1,2')",
        r"ERR user_script:1: Expected comma or array end but found T_END at character 5",
    ),
    (
        r#"return cjson.decode('{"a" 1}')"#,
        r"ERR user_script:1: Expected colon but found T_NUMBER at character 6",
    ),
    (
        r"return cjson.decode('{1:2}')",
        r"ERR user_script:1: Expected object key string but found T_NUMBER at character 2",
    ),
    (
        r"return cjson.decode('[1,]')",
        r"ERR user_script:1: Expected value but found T_ARR_END at character 4",
    ),
    (
        r#"return cjson.decode('{"a":1,}')"#,
        r"ERR user_script:1: Expected object key string but found T_OBJ_END at character 8",
    ),
    (
        r"return cjson.decode('[1] x')",
        r"ERR user_script:1: Expected the end but found invalid token at character 5",
    ),
    (
        r"return cjson.decode('tru')",
        r"ERR user_script:1: Expected value but found invalid token at character 1",
    ),
    (
        r"return cjson.decode('nil')",
        r"ERR user_script:1: Expected value but found invalid token at character 1",
    ),
    (
        r"return cjson.decode('')",
        r"ERR user_script:1: Expected value but found T_END at character 1",
    ),
    (
        r"return cjson.decode('  ')",
        r"ERR user_script:1: Expected value but found T_END at character 3",
    ),
    (
        r"return cjson.decode('-')",
        r"ERR user_script:1: Expected value but found invalid number at character 1",
    ),
    (
        r"return cjson.decode('+')",
        r"ERR user_script:1: Expected value but found invalid number at character 1",
    ),
    (
        r"return cjson.decode('- 1')",
        r"ERR user_script:1: Expected value but found invalid number at character 1",
    ),
    (
        r#"return cjson.decode('"a\0b"')"#,
        r"ERR user_script:1: Expected value but found unexpected end of string at character 3",
    ),
    (
        r"return cjson.decode('1\0')",
        r"ERR user_script:1: JSON parser does not support UTF-16 or UTF-32",
    ),
    (
        r"return cjson.decode('\0')",
        r"ERR user_script:1: Expected value but found T_END at character 1",
    ),
    (
        r"return cjson.decode(string.rep('[', 1001))",
        r"ERR user_script:1: Found too many nested data structures (1001) at character 1001",
    ),
    (
        r"return cjson.decode(string.rep('[', 1000))",
        r"ERR user_script:1: Expected value but found T_END at character 1001",
    ),
    (
        r#"return cjson.decode(string.rep('{"a":', 1001))"#,
        r"ERR user_script:1: Found too many nested data structures (1001) at character 5001",
    ),
    (
        r"return cjson.decode('1.5.5')",
        r"ERR user_script:1: Expected the end but found invalid token at character 4",
    ),
    (
        r"return cjson.decode('1e')",
        r"ERR user_script:1: Expected the end but found invalid token at character 2",
    ),
    (
        r"return cjson.decode('[1 2]')",
        r"ERR user_script:1: Expected comma or array end but found T_NUMBER at character 4",
    ),
    (
        r#"return cjson.decode('{"a":1 "b":2}')"#,
        r"ERR user_script:1: Expected comma or object end but found T_STRING at character 8",
    ),
    (
        r#"return cjson.decode('{"a"}')"#,
        r"ERR user_script:1: Expected colon but found T_OBJ_END at character 5",
    ),
    (
        r#"return cjson.decode('{"a":}')"#,
        r"ERR user_script:1: Expected value but found T_OBJ_END at character 6",
    ),
    (
        r"return cjson.decode('@')",
        r"ERR user_script:1: Expected value but found invalid token at character 1",
    ),
    (
        r"return cjson.decode('infinit')",
        r"ERR user_script:1: Expected the end but found invalid token at character 4",
    ),
    (
        r"return cjson.decode('NaNx')",
        r"ERR user_script:1: Expected the end but found invalid token at character 4",
    ),
    (
        r"return cjson.decode('truex')",
        r"ERR user_script:1: Expected the end but found invalid token at character 5",
    ),
    (
        r"return cjson.decode('\v1')",
        r"ERR user_script:1: Expected value but found invalid token at character 1",
    ),
    (
        r"return cjson.decode()",
        r"ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)",
    ),
    (
        r"return cjson.decode({})",
        r"ERR user_script:1: bad argument #1 to 'decode' (string expected, got table)",
    ),
    (
        r"return cjson.decode('a', 'b')",
        r"ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)",
    ),
    (
        r"return cjson.encode_keep_buffer(), cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision(), cjson.encode_sparse_array(), cjson.encode_invalid_numbers(), cjson.decode_invalid_numbers()",
        r"true 1000 1000 14 false false true",
    ),
    (
        r"return cjson._NAME, cjson._VERSION, type(cjson.null), cjson.null == nil, tostring(cjson.null)",
        r#""cjson" "2.1.0" "userdata" false "userdata: (nil)""#,
    ),
    (
        r"local t = {} for k in pairs(cjson) do t[#t + 1] = k end table.sort(t) return table.concat(t, ' ')",
        r#""_NAME _VERSION decode decode_invalid_numbers decode_max_depth encode encode_invalid_numbers encode_keep_buffer encode_max_depth encode_number_precision encode_sparse_array new null""#,
    ),
    (
        r"local c = cjson.new() return c.encode_sparse_array(true, -1)",
        r"ERR user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)",
    ),
    (
        r"return cjson.encode_sparse_array(1, 2, 3, 4)",
        r"ERR user_script:1: bad argument #4 to 'encode_sparse_array' (found too many arguments)",
    ),
    (
        r"return cjson.encode_invalid_numbers('maybe')",
        r"ERR user_script:1: bad argument #1 to 'encode_invalid_numbers' (invalid option 'maybe')",
    ),
    (
        r"return cjson.encode_number_precision(15)",
        r"ERR user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
    ),
    (
        r"return cjson.encode_number_precision({})",
        r"ERR user_script:1: bad argument #1 to 'encode_number_precision' (number expected, got table)",
    ),
    (
        r"return cjson.encode_max_depth(0)",
        r"ERR user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
    ),
    (
        r"return cjson.encode_keep_buffer(2)",
        r"ERR user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option '2')",
    ),
    (
        r"return cjson.decode_max_depth(1, 2)",
        r"ERR user_script:1: bad argument #2 to 'decode_max_depth' (found too many arguments)",
    ),
    (
        r"local c = cjson.new() return c.encode_sparse_array(true, 3, 5), c.encode({[1] = 1, [20] = 2}), c.encode_sparse_array('off', 1, 1), c.encode({[1] = 1, [3] = 2}), cjson.encode({[1] = 1, [3] = 2})",
        r"ERR user_script:1: Cannot serialise table: excessively sparse array",
    ),
    (
        r"local c = cjson.new() return c.encode_sparse_array(nil, 0), c.encode({[1] = 1, [100] = 2})",
        r#"false "[1,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,2]""#,
    ),
    (
        r"local c = cjson.new() c.encode_number_precision(3) return c.encode({3.14159, 1234567, 0.0001234}), c.encode_number_precision(1), c.encode(0.55), cjson.encode(3.14159)",
        r#""[3.14,1.23e+06,0.000123]" 1 "0.6" "3.14159""#,
    ),
    (
        r"local c = cjson.new() return c.encode_invalid_numbers(true), c.encode({0/0, 1/0, -1/0}), c.encode_invalid_numbers('null'), c.encode({0/0, 1/0}), c.encode_invalid_numbers('off')",
        r#"true "[nan,inf,-inf]" "null" "[null,null]" false"#,
    ),
    (
        r"local c = cjson.new() return c.decode_invalid_numbers(false), pcall(c.decode, 'nan'), pcall(c.decode, '0x10'), pcall(c.decode, '+1'), pcall(c.decode, '01'), pcall(c.decode, '-inf'), c.decode('-1.5')",
        r"false false false false false false -1.5",
    ),
    (
        r"local c = cjson.new() c.encode_max_depth(3) return c.encode({{{1}}}), pcall(c.encode, {{{{1}}}}), c.encode_max_depth()",
        r#""[[[1]]]" false 3"#,
    ),
    (
        r#"local c = cjson.new() c.decode_max_depth(2) return c.decode('[[1]]'), pcall(c.decode, '[[[1]]]'), pcall(c.decode, '{"a":{"b":{}}}')"#,
        r#"{1={1=1}} false false "Found too many nested data structures (3) at character 11""#,
    ),
    (
        r"local c = cjson.new() c.encode_max_depth(10000) local t = {} local x = t for i = 1, 5000 do x[1] = {} x = x[1] end return pcall(c.encode, t)",
        r#"true "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]""#,
    ),
    (
        r"local c = cjson.new() c.encode_max_depth(10000) local t = {} local x = t for i = 1, 5000 do x.k = {} x = x.k end return pcall(c.encode, t)",
        r#"false "Cannot serialise, excessive nesting (4000)""#,
    ),
    (
        r"local c = cjson.new() c.decode_max_depth(10000) return pcall(c.decode, string.rep('[', 9000))",
        r#"false "Found too many nested data structures (7999) at character 7999""#,
    ),
    (
        r#"local c = cjson.new() c.decode_max_depth(10000) return pcall(c.decode, string.rep('{"a":', 9000))"#,
        r#"false "Found too many nested data structures (4000) at character 19996""#,
    ),
    (
        r"local c = cjson.new() return c.encode_keep_buffer(false), c.encode({1}), c.encode_keep_buffer('on'), c.encode_sparse_array(), c.encode_sparse_array(false, nil, 3)",
        r#"false "[1]" true false false 2 3"#,
    ),
    (
        r"local c = cjson.new() pcall(c.encode_sparse_array, true, -1) return c.encode_sparse_array(), c.encode({[1] = 1, [30] = 2})",
        r#"true "{\"1\":1,\"30\":2}""#,
    ),
    (
        r"return cjson.decode('0x1.8p1'), cjson.decode('0x123456789abcdef123'), cjson.decode('nan(123)'), cjson.decode('-nan'), cjson.decode('-0x10'), cjson.decode('0XaP-2')",
        r"3 3.3581272767073033e+20 nan -nan -16 2.5",
    ),
    (
        r"return cjson.decode('0x')",
        r"ERR user_script:1: Expected the end but found invalid token at character 2",
    ),
    (
        r"return cjson.decode('1e+')",
        r"ERR user_script:1: Expected the end but found invalid token at character 2",
    ),
    (r"return cjson.decode('-.5')", r"-0.5"),
    (
        r#"return cjson.encode(cjson.decode('"\\u0000"')), cjson.decode('[1e400, -1e400, 1e-400]')"#,
        r#""\"\\u0000\"" {1=inf,2=-inf,3=0}"#,
    ),
];

pub(crate) const CMSGPACK: &[(&str, &str)] = &[
    (
        r"return cmsgpack.pack(1), cmsgpack.pack(-1), cmsgpack.pack(127), cmsgpack.pack(128), cmsgpack.pack(255), cmsgpack.pack(256), cmsgpack.pack(65535), cmsgpack.pack(65536), cmsgpack.pack(2^32 - 1), cmsgpack.pack(2^32)",
        r#""\x01" "\xff" "\x7f" "\xcc\x80" "\xcc\xff" "\xcd\x01\x00" "\xcd\xff\xff" "\xce\x00\x01\x00\x00" "\xce\xff\xff\xff\xff" "\xcf\x00\x00\x00\x01\x00\x00\x00\x00""#,
    ),
    (
        r"return cmsgpack.pack(-32), cmsgpack.pack(-33), cmsgpack.pack(-128), cmsgpack.pack(-129), cmsgpack.pack(-32768), cmsgpack.pack(-32769), cmsgpack.pack(-2^31), cmsgpack.pack(-2^31 - 1), cmsgpack.pack(0)",
        r#""\xe0" "\xd0\xdf" "\xd0\x80" "\xd1\xff\x7f" "\xd1\x80\x00" "\xd2\xff\xff\x7f\xff" "\xd2\x80\x00\x00\x00" "\xd3\xff\xff\xff\xff\x7f\xff\xff\xff" "\x00""#,
    ),
    (
        r"return cmsgpack.pack(1.5), cmsgpack.pack(0.1), cmsgpack.pack(-0.0), cmsgpack.pack(0/0), cmsgpack.pack(2^64), cmsgpack.pack(2^63), cmsgpack.pack(-2^63), cmsgpack.pack(2^53 + 1), cmsgpack.pack(1e300)",
        r#""\xca?\xc0\x00\x00" "\xcb?\xb9\x99\x99\x99\x99\x99\x9a" "\x00" "\xcb\xff\xf8\x00\x00\x00\x00\x00\x00" "\xca_\x80\x00\x00" "\xca_\x00\x00\x00" "\xd3\x80\x00\x00\x00\x00\x00\x00\x00" "\xcf\x00 \x00\x00\x00\x00\x00\x00" "\xcb~7\xe4<\x88\x00u\x9c""#,
    ),
    (
        r"local inf = 1/0 return cmsgpack.pack(inf), cmsgpack.pack(-inf), cmsgpack.pack(3.4028234663852886e38), cmsgpack.pack(1e-45), cmsgpack.pack(-2.5)",
        r#""\xca\x7f\x80\x00\x00" "\xca\xff\x80\x00\x00" "\xca\x7f\x7f\xff\xff" "\xcb6\x96\xd6\x01\xad7j\xb9" "\xca\xc0 \x00\x00""#,
    ),
    (
        r"return cmsgpack.pack(''), cmsgpack.pack('abc'), cmsgpack.pack(string.rep('a', 31)), cmsgpack.pack(string.rep('a', 32)), cmsgpack.pack(true), cmsgpack.pack(false), cmsgpack.pack(nil), cmsgpack.pack(cjson.null), cmsgpack.pack('a\0b')",
        r#""\xa0" "\xa3abc" "\xbfaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" "\xd9 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" "\xc3" "\xc2" "\xc0" "\xc0" "\xa3a\x00b""#,
    ),
    (
        r"return string.sub(cmsgpack.pack(string.rep('a', 255)), 1, 3), string.sub(cmsgpack.pack(string.rep('a', 256)), 1, 4), string.sub(cmsgpack.pack(string.rep('a', 65535)), 1, 4), string.sub(cmsgpack.pack(string.rep('a', 65536)), 1, 6)",
        r#""\xd9\xffa" "\xda\x01\x00a" "\xda\xff\xffa" "\xdb\x00\x01\x00\x00a""#,
    ),
    (
        r"return cmsgpack.pack({}), cmsgpack.pack({1, 2, 3}), cmsgpack.pack({a = 1}), cmsgpack.pack({1, 2, nil, 4}), cmsgpack.pack({[1] = 1, [3] = 3}), cmsgpack.pack({[0] = 1}), cmsgpack.pack({1.5}), cmsgpack.pack(1, 2, 'x')",
        r#""\x90" "\x93\x01\x02\x03" "\x81\xa1a\x01" "\x83\x01\x01\x02\x02\x04\x04" "\x82\x01\x01\x03\x03" "\x81\x00\x01" "\x91\xca?\xc0\x00\x00" "\x01\x02\xa1x""#,
    ),
    (
        r"return cmsgpack.pack({[1] = 1, [2] = 2, [2^31] = 3}), cmsgpack.pack({[1.5] = 'a'}), cmsgpack.pack({[true] = false}), cmsgpack.pack({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}), cmsgpack.pack({[{}] = {1}})",
        r#""\x83\x01\x01\x02\x02\xce\x80\x00\x00\x00\x03" "\x81\xca?\xc0\x00\x00\xa1a" "\x81\xc3\xc2" "\xdc\x00\x10\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10" "\x81\x90\x91\x01""#,
    ),
    (
        r"local t = {} for i = 1, 16 do t['k' .. i] = i end return string.sub(cmsgpack.pack(t), 1, 3), #cmsgpack.pack(t)",
        r#""\xde\x00\x10" 74"#,
    ),
    (
        r"local t = {} for i = 1, 70000 do t[i] = 1 end return string.sub(cmsgpack.pack(t), 1, 6), #cmsgpack.pack(t)",
        r#""\xdd\x00\x01\x11p\x01" 70005"#,
    ),
    (
        r"return cmsgpack.pack(function() end), cmsgpack.pack(coroutine.create(function() end)), cmsgpack.pack({f = function() end})",
        r#""\xc0" "\xc0" "\x81\xa1f\xc0""#,
    ),
    (
        r"local t = {} t.a = t return #cmsgpack.pack(t), cmsgpack.pack(t):sub(1, 8)",
        r#"49 "\x81\xa1a\x81\xa1a\x81\xa1""#,
    ),
    (
        r"local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)",
        r#""\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0""#,
    ),
    (
        r"local t = {} local c = t for i = 1, 15 do c[1] = {} c = c[1] end c[1] = 7 return cmsgpack.pack(t)",
        r#""\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x07""#,
    ),
    (
        r"return cmsgpack.pack()",
        r"ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)",
    ),
    (
        r"local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t))",
        r"11618",
    ),
    (
        r"local t = {} for i = 1, 4001 do t[i] = i end return #cmsgpack.pack(unpack(t))",
        r"ERR user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)",
    ),
    (
        r"return cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2}, {x = 1.5}, true, 0.1, -7, 2^40))",
        r#"1 "a" {1=1,2=2} {"x"=1.5} true 0.10000000000000001 -7 1099511627776"#,
    ),
    (r"return cmsgpack.unpack('')", r""),
    (
        r"return cmsgpack.unpack()",
        r"ERR user_script:1: bad argument #1 to 'unpack' (string expected, got no value)",
    ),
    (
        r"return cmsgpack.unpack({})",
        r"ERR user_script:1: bad argument #1 to 'unpack' (string expected, got table)",
    ),
    (r"return cmsgpack.unpack(12)", r"49 50"),
    (
        r"return cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))",
        r"1 1",
    ),
    (
        r"return cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)",
        r"-1 3",
    ),
    (r"return cmsgpack.unpack_one('\1\2', 1.9)", r"-1 2"),
    (r"return cmsgpack.unpack_one('')", r"-1"),
    (
        r"return cmsgpack.unpack_one('\1\2', 'x')",
        r"ERR user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)",
    ),
    (
        r"return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)",
        r"2 1 2",
    ),
    (
        r"return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 1)",
        r"-1 2 3",
    ),
    (
        r"return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 3)",
        r"-1",
    ),
    (
        r"return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 4)",
        r"ERR user_script:1: Start offset 4 greater than input length 3.",
    ),
    (
        r"return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), -1)",
        r"ERR user_script:1: Invalid request to unpack with offset of 0 and limit of 3.",
    ),
    (
        r"return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, -1)",
        r"ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 3.",
    ),
    (r"return cmsgpack.unpack_limit('\1\2', 0, 0)", r"1 2"),
    (r"return cmsgpack.unpack_limit('\1\2', 0, 1)", r"1"),
    (
        r"return cmsgpack.unpack_limit('\1\2')",
        r"ERR user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)",
    ),
    (
        r"return cmsgpack.unpack_limit({}, 1)",
        r"ERR user_script:1: bad argument #1 to 'unpack_limit' (string expected, got table)",
    ),
    (
        r"return cmsgpack.unpack('\207\255\255\255\255\255\255\255\255'), cmsgpack.unpack('\207\128\0\0\0\0\0\0\1'), cmsgpack.unpack('\211\128\0\0\0\0\0\0\1'), cmsgpack.unpack('\207\0\0\0\1\0\0\0\0')",
        r"-1 -9.2233720368547758e+18 -9.2233720368547758e+18 4294967296",
    ),
    (
        r"return cmsgpack.unpack('\204\200\205\1\0\206\0\1\0\0\208\128\209\128\0\210\128\0\0\0\255\224\127\0')",
        r"200 256 65536 -128 -32768 -2147483648 -1 -32 127 0",
    ),
    (
        r"return cmsgpack.unpack('\217\3abc\218\0\2ab\219\0\0\0\1a\160\163xyz')",
        r#""abc" "ab" "a" "" "xyz""#,
    ),
    (
        r"return cmsgpack.unpack('\202\63\192\0\0'), cmsgpack.unpack('\203\63\185\153\153\153\153\153\154'), cmsgpack.unpack('\202\127\192\0\0'), cmsgpack.unpack('\203\255\240\0\0\0\0\0\0')",
        r"1.5 0.10000000000000001 nan -inf",
    ),
    (
        r"return cmsgpack.unpack('\220\0\2\1\2'), cmsgpack.unpack('\221\0\0\0\2\1\2'), cmsgpack.unpack('\222\0\1\161a\1'), cmsgpack.unpack('\223\0\0\0\1\161a\1')",
        r#"{1=1,2=2} {1=1,2=2} {"a"=1} {"a"=1}"#,
    ),
    (
        r"return cmsgpack.unpack('\195\194\192\1'), cmsgpack.unpack('\147\1\192\3'), cmsgpack.unpack('\130\1\2\161x\145\192'), cmsgpack.unpack('\144\128')",
        r#"true {1=1,3=3} {1=2,"x"={}} {} {}"#,
    ),
    (
        r"return cmsgpack.unpack('\129\192\1')",
        r"ERR table index is nil",
    ),
    (
        r"return cmsgpack.unpack('\129\203\255\248\0\0\0\0\0\0\1')",
        r"ERR table index is NaN",
    ),
    (
        r"return cmsgpack.unpack('\193')",
        r"ERR user_script:1: Bad data format in input.",
    ),
    (
        r"return cmsgpack.unpack('\196\1a')",
        r"ERR user_script:1: Bad data format in input.",
    ),
    (
        r"return cmsgpack.unpack('\212\1a')",
        r"ERR user_script:1: Bad data format in input.",
    ),
    (
        r"return cmsgpack.unpack('\199\1\1a')",
        r"ERR user_script:1: Bad data format in input.",
    ),
    (
        r"return cmsgpack.unpack('\217')",
        r"ERR user_script:1: Missing bytes in input.",
    ),
    (
        r"return cmsgpack.unpack('\218\0')",
        r"ERR user_script:1: Missing bytes in input.",
    ),
    (
        r"return cmsgpack.unpack('\163ab')",
        r"ERR user_script:1: Missing bytes in input.",
    ),
    (
        r"return cmsgpack.unpack('\205\1')",
        r"ERR user_script:1: Missing bytes in input.",
    ),
    (
        r"return cmsgpack.unpack('\146\1')",
        r"ERR user_script:1: Missing bytes in input.",
    ),
    (
        r"return cmsgpack.unpack('\1\2\203')",
        r"ERR user_script:1: Missing bytes in input.",
    ),
    (
        r"return #{cmsgpack.unpack(string.rep('\1', 7999))}",
        r"7999",
    ),
    (
        r"return #{cmsgpack.unpack(string.rep('\1', 8000))}",
        r"ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
    ),
    (
        r"return cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION",
        r#""cmsgpack" "lua-cmsgpack 0.4.0" "Copyright (C) 2012, Salvatore Sanfilippo" "MessagePack C implementation for Lua""#,
    ),
    (
        r"local t = {} for k in pairs(cmsgpack) do t[#t + 1] = k end table.sort(t) return table.concat(t, ' ')",
        r#""_COPYRIGHT _DESCRIPTION _NAME _VERSION pack unpack unpack_limit unpack_one""#,
    ),
    (
        r"local ok, e = pcall(cmsgpack.unpack, '\193') return e",
        r#""Bad data format in input.""#,
    ),
    (
        r"local t = {} local c = t for i = 1, 3000 do c[1] = {} c = c[1] end local s = string.rep('\145', 3000) .. '\192' local r = cmsgpack.unpack(s) local d = 0 while type(r) == 'table' do d = d + 1 r = r[1] end return d",
        r"3000",
    ),
    (
        r"return pcall(cmsgpack.unpack, string.rep('\145', 5000) .. '\1')",
        r#"false "stack overflow (in function mp_decode_to_lua_array)""#,
    ),
    (
        r"local ok, r = pcall(cmsgpack.unpack, string.rep('\129\1', 3000) .. '\1') local d = 0 while type(r) == 'table' do d = d + 1 r = r[1] end return ok, d, r",
        r"true 3000 1",
    ),
    (
        r"return cmsgpack.unpack('\130\145\1\2\146\1\2\3')",
        r"{{1=1}=2,{1=1,2=2}=3}",
    ),
    (
        r"return pcall(cmsgpack.unpack, string.rep('\129\1', 4100) .. '\1')",
        r#"false "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)""#,
    ),
    (
        r"local ok, r = pcall(cmsgpack.unpack, string.rep('\145', 3999) .. '\1') local d = 0 while type(r) == 'table' do d = d + 1 r = r[1] end return ok, d, r",
        r"true 3999 1",
    ),
    (
        r"return pcall(cmsgpack.unpack, string.rep('\145', 4000) .. '\1')",
        r#"false "stack overflow (in function mp_decode_to_lua_array)""#,
    ),
    (
        r"local ok, r = pcall(cmsgpack.unpack, string.rep('\129\145\1', 2000) .. '\1') local d = 0 while type(r) == 'table' do d = d + 1 local k, v = next(r) r = v end return ok, d, r",
        r"true 2000 1",
    ),
];
