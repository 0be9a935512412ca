//! VSIM's FILTER expressions, as Redis 8.2 reads and runs them: numbers, 'strings' or
//! "strings" (kept as written: a backslash only protects the next character from ending the
//! string), `null`, tuples `[1, "a"]`, selectors `.field` (a top-level field of the element's
//! JSON attributes), and the operators `! not ** * / % + - > >= < <= == != in and && or ||`
//! with Redis's precedences (`**` right-associative).
//!
//! The program is compiled to postfix once and run per candidate element. The rules that show
//! in results are Redis's: a selector that finds nothing (no attributes, no such field, a
//! nested object, malformed JSON) makes the whole expression false, and an element without
//! attributes matches no expression at all; `in` tests membership of a tuple or, between two
//! strings, a substring; strings compare as bytes,
//! numbers as doubles, mixed operands as numbers (a string that is not wholly a number counts
//! as 0); `null` equals only `null`; truthiness is JavaScript's (0, "" and null are false).
//!
//! Errors carry the byte offset Redis reports in `syntax error in FILTER expression near:`:
//! where tokenising stopped, or 0 (the whole expression) for errors found while compiling,
//! because Redis never records token offsets.

use std::cmp::Ordering;

pub use super::token::{strtod_whole, Op, Token};

/// The operator table: spelling, operator, precedence, arity.
const OPS: &[(&str, Op, u8, u8)] = &[
    ("(", Op::Open, 7, 0),
    (")", Op::Close, 7, 0),
    ("!", Op::Not, 6, 1),
    ("not", Op::Not, 6, 1),
    ("**", Op::Pow, 5, 2),
    ("*", Op::Mul, 4, 2),
    ("/", Op::Div, 4, 2),
    ("%", Op::Mod, 4, 2),
    ("+", Op::Add, 3, 2),
    ("-", Op::Sub, 3, 2),
    (">", Op::Gt, 2, 2),
    (">=", Op::Ge, 2, 2),
    ("<", Op::Lt, 2, 2),
    ("<=", Op::Le, 2, 2),
    ("==", Op::Eq, 2, 2),
    ("!=", Op::Ne, 2, 2),
    ("in", Op::In, 2, 2),
    ("and", Op::And, 1, 2),
    ("&&", Op::And, 1, 2),
    ("or", Op::Or, 0, 2),
    ("||", Op::Or, 0, 2),
];

const OP_CHARS: &[u8] = b"+-*%/!()<>=|&";

impl Op {
    fn info(self) -> (u8, u8) {
        let &(_, _, prec, arity) = OPS.iter().find(|o| o.1 == self).expect("in the table");
        (prec, arity)
    }
}

/// A compiled expression.
#[derive(Clone, Debug)]
pub struct Program {
    code: Vec<Token>,
}

/// C's `isspace` in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_selector_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

struct Lexer<'a> {
    s: &'a [u8],
    p: usize,
}

impl Lexer<'_> {
    fn at(&self, i: usize) -> u8 {
        self.s.get(i).copied().unwrap_or(0)
    }

    fn skip_spaces(&mut self) {
        while is_space(self.at(self.p)) {
            self.p += 1;
        }
    }

    fn number(&mut self) -> Option<Token> {
        let start = self.p;
        loop {
            let c = self.at(self.p);
            let ok = c.is_ascii_digit()
                || c == b'.'
                || c == b'e'
                || c == b'E'
                || (self.p == start && c == b'-');
            if !ok {
                break;
            }
            if self.p - start >= 255 {
                return None;
            }
            self.p += 1;
        }
        strtod_whole(&self.s[start..self.p]).map(Token::Num)
    }

    fn string(&mut self) -> Option<Token> {
        let quote = self.at(self.p);
        self.p += 1;
        let start = self.p;
        while self.at(self.p) != 0 {
            if self.at(self.p) == b'\\' && self.at(self.p + 1) != 0 {
                self.p += 2;
                continue;
            }
            if self.at(self.p) == quote {
                let t = Token::Str(self.s[start..self.p].to_vec());
                self.p += 1;
                return Some(t);
            }
            self.p += 1;
        }
        None
    }

    fn selector(&mut self) -> Token {
        self.p += 1;
        let start = self.p;
        while is_selector_char(self.at(self.p)) {
            self.p += 1;
        }
        Token::Selector(self.s[start..self.p].to_vec())
    }

    fn tuple(&mut self) -> Option<Token> {
        self.p += 1;
        let mut items = Vec::new();
        loop {
            self.skip_spaces();
            if self.at(self.p) == b']' {
                self.p += 1;
                break;
            }
            let c = self.at(self.p);
            let item = if c.is_ascii_digit() || c == b'-' {
                self.number()?
            } else if c == b'"' || c == b'\'' {
                self.string()?
            } else {
                return None;
            };
            items.push(item);
            self.skip_spaces();
            match self.at(self.p) {
                b']' => {
                    self.p += 1;
                    break;
                }
                b',' => self.p += 1,
                _ => return None,
            }
        }
        Some(Token::Tuple(items))
    }

    /// The longest operator spelled at the start of the run of letters and operator
    /// characters, or the literal `null` (the whole run). On failure the position stays at
    /// the end of the run, which is where Redis reports the error.
    fn operator(&mut self) -> Option<Token> {
        let start = self.p;
        while {
            let c = self.at(self.p);
            c != 0 && (c.is_ascii_alphabetic() || OP_CHARS.contains(&c))
        } {
            self.p += 1;
        }
        let run = &self.s[start..self.p];
        if run == b"null" {
            return Some(Token::Null);
        }
        let best = OPS
            .iter()
            .filter(|(name, ..)| run.starts_with(name.as_bytes()))
            .max_by_key(|(name, ..)| name.len())?;
        self.p = start + best.0.len();
        Some(Token::Op(best.1))
    }

    fn tokens(&mut self) -> Result<Vec<Token>, usize> {
        let mut out: Vec<Token> = Vec::new();
        loop {
            self.skip_spaces();
            let minus_is_number = match out.last() {
                None => true,
                Some(Token::Op(op)) => *op != Op::Close,
                Some(_) => false,
            };
            let c = self.at(self.p);
            let t = if c == 0 {
                return Ok(out);
            } else if c.is_ascii_digit()
                || (minus_is_number && c == b'-' && self.at(self.p + 1).is_ascii_digit())
            {
                self.number()
            } else if c == b'"' || c == b'\'' {
                self.string()
            } else if c == b'.'
                && (self.p + 1 == self.s.len() || is_selector_char(self.s[self.p + 1]))
            {
                // A dot that ends the expression is a selector too, of no name (which matches
                // nothing): Redis's `strchr("_-", c)` finds the string's terminator.
                Some(self.selector())
            } else if c == b'[' {
                self.tuple()
            } else if c.is_ascii_alphabetic() || OP_CHARS.contains(&c) {
                self.operator()
            } else {
                None
            };
            match t {
                Some(t) => out.push(t),
                None => return Err(self.p),
            }
        }
    }
}

impl Program {
    /// Compiles `expr` (read as a C string: up to a NUL byte). `Err` is the offset of the
    /// error (0 when found after tokenising, as in Redis).
    pub fn compile(expr: &[u8]) -> Result<Program, usize> {
        let expr = match expr.iter().position(|&c| c == 0) {
            Some(n) => &expr[..n],
            None => expr,
        };
        let tokens = Lexer { s: expr, p: 0 }.tokens()?;
        let mut code = Vec::new();
        let mut ops: Vec<Op> = Vec::new();
        let mut depth = 0i64;
        for t in tokens {
            match t {
                Token::Op(op) => process_operator(op, &mut ops, &mut code, &mut depth)?,
                value => {
                    code.push(value);
                    depth += 1;
                }
            }
        }
        while let Some(op) = ops.pop() {
            if op == Op::Open {
                return Err(0);
            }
            emit(op, &mut code, &mut depth)?;
        }
        if depth != 1 {
            return Err(0);
        }
        Ok(Program { code })
    }

    /// Runs the program against an element's attributes (`None`: the element has none, and
    /// then no expression matches, not even a constant one, as in Redis).
    pub fn matches(&self, json: Option<&[u8]>) -> bool {
        let Some(json) = json else { return false };
        let mut stack: Vec<Token> = Vec::with_capacity(8);
        for t in &self.code {
            match t {
                Token::Selector(field) => {
                    if field.is_empty() {
                        return false;
                    }
                    match super::json::extract_field(json, field) {
                        Some(v) => stack.push(v),
                        None => return false,
                    }
                }
                Token::Op(op) => {
                    let b = stack.pop().expect("checked at compile time");
                    let a = if op.info().1 == 2 { stack.pop() } else { None };
                    stack.push(Token::Num(apply(*op, a.as_ref(), &b)));
                }
                value => stack.push(value.clone()),
            }
        }
        stack.pop().is_some_and(|t| truthy(&t))
    }
}

fn emit(op: Op, code: &mut Vec<Token>, depth: &mut i64) -> Result<(), usize> {
    let arity = op.info().1 as i64;
    if *depth < arity {
        return Err(0);
    }
    code.push(Token::Op(op));
    *depth = *depth - arity + 1;
    Ok(())
}

/// The shunting-yard step for one operator.
fn process_operator(
    op: Op,
    ops: &mut Vec<Op>,
    code: &mut Vec<Token>,
    depth: &mut i64,
) -> Result<(), usize> {
    match op {
        Op::Open => {
            ops.push(op);
            return Ok(());
        }
        Op::Close => loop {
            match ops.pop() {
                None => return Err(0),
                Some(Op::Open) => return Ok(()),
                Some(top) => emit(top, code, depth)?,
            }
        },
        _ => {}
    }
    let prec = op.info().0;
    while let Some(&top) = ops.last() {
        if top == Op::Open {
            break;
        }
        let top_prec = top.info().0;
        if top_prec < prec || (op == Op::Pow && top_prec <= prec) {
            break;
        }
        ops.pop();
        emit(top, code, depth)?;
    }
    ops.push(op);
    Ok(())
}

/// A value as a number: strings that are wholly a number (C's strtod, under 256 bytes),
/// everything else 0.
fn to_num(t: &Token) -> f64 {
    match t {
        Token::Num(n) => *n,
        Token::Str(s) if s.len() < 256 => strtod_whole(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

fn truthy(t: &Token) -> bool {
    match t {
        Token::Num(n) => *n != 0.0,
        Token::Str(s) => !s.is_empty(),
        Token::Null => false,
        _ => true,
    }
}

fn equal(a: &Token, b: &Token) -> bool {
    match (a, b) {
        (Token::Str(x), Token::Str(y)) => x == y,
        (Token::Num(x), Token::Num(y)) => x == y,
        (Token::Null, _) | (_, Token::Null) => matches!((a, b), (Token::Null, Token::Null)),
        _ => to_num(a) == to_num(b),
    }
}

fn compare(a: &Token, b: &Token) -> Option<Ordering> {
    to_num(a).partial_cmp(&to_num(b))
}

fn apply(op: Op, a: Option<&Token>, b: &Token) -> f64 {
    let a_num = || a.map_or(0.0, to_num);
    let flag = |x: bool| if x { 1.0 } else { 0.0 };
    let a_tok = || a.expect("binary operator");
    match op {
        Op::Not => flag(!truthy(b)),
        Op::Pow => a_num().powf(to_num(b)),
        Op::Mul => a_num() * to_num(b),
        Op::Div => a_num() / to_num(b),
        Op::Mod => libm_fmod(a_num(), to_num(b)),
        Op::Add => a_num() + to_num(b),
        Op::Sub => a_num() - to_num(b),
        Op::Gt => flag(compare(a_tok(), b) == Some(Ordering::Greater)),
        Op::Ge => flag(matches!(
            compare(a_tok(), b),
            Some(Ordering::Greater | Ordering::Equal)
        )),
        Op::Lt => flag(compare(a_tok(), b) == Some(Ordering::Less)),
        Op::Le => flag(matches!(
            compare(a_tok(), b),
            Some(Ordering::Less | Ordering::Equal)
        )),
        Op::Eq => flag(equal(a_tok(), b)),
        Op::Ne => flag(!equal(a_tok(), b)),
        // Membership in a tuple, or a substring of a string.
        Op::In => match (a_tok(), b) {
            (a, Token::Tuple(items)) => flag(items.iter().any(|i| equal(a, i))),
            (Token::Str(needle), Token::Str(hay)) => {
                flag(needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle.as_slice()))
            }
            _ => 0.0,
        },
        Op::And => flag(truthy(a_tok()) && truthy(b)),
        Op::Or => flag(truthy(a_tok()) || truthy(b)),
        Op::Open | Op::Close => 0.0,
    }
}

/// C's `fmod` (Rust's `%` on floats is the same operation).
fn libm_fmod(a: f64, b: f64) -> f64 {
    a % b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(expr: &str, json: &str) -> bool {
        Program::compile(expr.as_bytes())
            .unwrap()
            .matches(Some(json.as_bytes()))
    }

    #[test]
    fn precedence_and_associativity() {
        assert!(run("2 ** 3 ** 2 == 512", "{}"));
        assert!(run("1 + 2 * 3 == 7", "{}"));
        assert!(run("(1 + 2) * 3 == 9", "{}"));
        assert!(run("1 or 0 and 0", "{}"));
        assert!(run("!0 and not 0", "{}"));
        assert!(run("10 - -2 == 12", "{}"));
    }

    #[test]
    fn selectors_read_top_level_json() {
        let j = r#"{"x":null,"y":1,"s":"a\"b","arr":[1,"q"],"o":{"z":1},"t":true}"#;
        assert!(run(".x == null", j));
        assert!(run(".y", j));
        assert!(
            !run(r#".s == "a\"b""#, j),
            "expression strings keep their backslashes"
        );
        assert!(run("1 in .arr and 'q' in .arr", j));
        assert!(!run(".o", j));
        assert!(run(".t == 1", j));
        assert!(!run(".missing", j));
        assert!(!run("!.missing", j));
        assert!(!Program::compile(b".y").unwrap().matches(None));
        assert!(!Program::compile(b"1").unwrap().matches(None));
    }

    #[test]
    fn in_finds_substrings_of_strings() {
        let j = r#"{"name":"Blade Runner","n":1999,"arr":["Run"]}"#;
        assert!(run("'Run' in .name", j));
        assert!(run("'' in .name and 'at' in 'Matrix'", j));
        assert!(!run("'run' in .name", j));
        assert!(!run("'Matrixx' in 'Matrix'", j));
        assert!(!run("1 in 'a1b'", j));
        assert!(!run("'19' in .n", j));
        assert!(!run("'a' in 5", j));
        assert!(run("'Run' in .arr", j));
    }

    #[test]
    fn a_final_dot_is_a_selector_of_nothing() {
        assert!(!run("1 + .", "{}"));
        assert!(!run("1 or .", r#"{"":1}"#));
        assert_eq!(Program::compile(b".year.").unwrap_err(), 0);
        assert_eq!(Program::compile(b". == 1").unwrap_err(), 0);
        assert_eq!(Program::compile(b".. == 1").unwrap_err(), 0);
    }

    #[test]
    fn errors_point_where_redis_points() {
        assert_eq!(Program::compile(b"5 $ 3").unwrap_err(), 2);
        assert_eq!(Program::compile(b".y ==").unwrap_err(), 0);
        assert_eq!(Program::compile(b"(.y").unwrap_err(), 0);
        assert_eq!(Program::compile(b".y )").unwrap_err(), 0);
        assert_eq!(Program::compile(b"\"abc").unwrap_err(), 4);
        assert_eq!(Program::compile(b"5 xyz 3").unwrap_err(), 5);
        assert!(Program::compile(b"").is_err());
    }

    /// A small model: integer arithmetic expressions built as trees, printed fully
    /// parenthesised, must evaluate as the tree does.
    #[derive(Clone, Debug)]
    enum Model {
        Lit(i32),
        Bin(Box<Model>, &'static str, Box<Model>),
    }

    impl Model {
        fn eval(&self) -> f64 {
            match self {
                Model::Lit(n) => *n as f64,
                Model::Bin(a, op, b) => {
                    let (a, b) = (a.eval(), b.eval());
                    match *op {
                        "+" => a + b,
                        "-" => a - b,
                        "*" => a * b,
                        ">" => (a > b) as i32 as f64,
                        "==" => (a == b) as i32 as f64,
                        "and" => (a != 0.0 && b != 0.0) as i32 as f64,
                        _ => (a != 0.0 || b != 0.0) as i32 as f64,
                    }
                }
            }
        }

        fn text(&self) -> String {
            match self {
                Model::Lit(n) => n.to_string(),
                Model::Bin(a, op, b) => format!("({} {} {})", a.text(), op, b.text()),
            }
        }
    }

    fn model() -> impl Strategy<Value = Model> {
        let leaf = (-50i32..50).prop_map(Model::Lit);
        leaf.prop_recursive(4, 32, 2, |inner| {
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", ">", "==", "and", "or"]),
                inner,
            )
                .prop_map(|(a, op, b)| Model::Bin(Box::new(a), op, Box::new(b)))
        })
    }

    proptest! {
        #[test]
        fn evaluates_like_the_model(m in model()) {
            let text = format!("{} == {}", m.text(), m.eval());
            let p = Program::compile(text.as_bytes()).unwrap();
            prop_assert!(p.matches(Some(b"{}")), "{}", text);
        }

        #[test]
        fn never_panics(expr in prop::collection::vec(any::<u8>(), 0..40),
                        json in prop::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(p) = Program::compile(&expr) {
                p.matches(Some(&json));
            }
        }
    }
}
