//! Renderings of a [`crate::report::TestResult`]: the same values printed as each tool's users
//! expect to read them. Formatters only lay out numbers the report module derived.

/// `value` as a JSON value, through its JSON text: each type's serializer to text is in the
/// binary already (it goes on the wire or into the store), where `serde_json::to_value` would
/// add a second copy of it (26 KB of MIPS code, and as much of the UI's wasm).
pub fn json_value<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Value {
    serde_json::to_string(value)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// `value` as `serde_json::to_string_pretty` writes it (two-space indents), byte for byte, but
/// laid out from the compact text: each type's serializer is then compiled for the compact
/// writer only, not a second time for the pretty one (12 KB of MIPS code).
pub fn pretty_json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string(value).map(|compact| indent_json(&compact))
}

/// Compact JSON text (no whitespace outside strings, as serde_json writes it) laid out as its
/// `PrettyFormatter` does: each member and element on a line of its own, `": "` after a key,
/// empty objects and arrays as `{}` and `[]`.
fn indent_json(compact: &str) -> String {
    fn new_line(out: &mut String, depth: usize) {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
    let bytes = compact.as_bytes();
    let mut out = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut plain = 0; // start of the text not yet copied
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        let (before, after) = (i.checked_sub(1).map(|j| bytes[j]), bytes.get(i + 1));
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                out.push_str(&compact[plain..=i]);
                plain = i + 1;
                depth += 1;
                if !matches!(after, Some(b'}' | b']')) {
                    new_line(&mut out, depth);
                }
            }
            b'}' | b']' => {
                out.push_str(&compact[plain..i]);
                plain = i;
                depth = depth.saturating_sub(1);
                if !matches!(before, Some(b'{' | b'[')) {
                    new_line(&mut out, depth);
                }
            }
            b',' => {
                out.push_str(&compact[plain..=i]);
                plain = i + 1;
                new_line(&mut out, depth);
            }
            b':' => {
                out.push_str(&compact[plain..=i]);
                plain = i + 1;
                out.push(' ');
            }
            _ => {}
        }
    }
    out.push_str(&compact[plain..]);
    out
}

pub mod cbr;
pub mod cfmt;
pub mod chart;
pub mod dccp;
pub mod html;
pub mod iperf2;
pub mod iperf3;
pub mod latency;
pub mod layout;
pub mod markup;
pub mod netperf;
#[cfg(feature = "plans")]
pub mod plan;
pub mod sweep;
pub mod ttcp;
pub mod wifi;

#[cfg(test)]
mod tests {
    #[test]
    fn pretty_json_is_serde_jsons_pretty_text() {
        let cases = [
            r#"{"a":1,"b":[1,2.5,-3e-7],"c":{},"d":[],"e":{"f":[[],{}],"g":null},"h":true}"#,
            r#"[{"k":"a \"quoted\" {[,:]} \\ string"},"ü∑ ✓",[[[]]],{"":""}]"#,
            r#"{"nested":{"deeper":{"deepest":[1,[2,[3]]]}},"x":"\u0001\n"}"#,
            "[]",
            "{}",
            "12.75",
            r#""just a string, {with: [brackets]}""#,
            "null",
        ];
        for text in cases {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                super::pretty_json(&value).unwrap(),
                serde_json::to_string_pretty(&value).unwrap(),
                "{text}"
            );
        }
    }
}
