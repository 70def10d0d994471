//! C printf number styles the classic tools print with (`%g`, `%.2g`), so perfpeer's output
//! matches theirs character for character.

/// C's `%.{precision}g`: the shorter of fixed and exponent notation, trailing zeros removed.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "C's %g: a decimal exponent of an f64 is within ±330 and a precision a few digits, so the i32/usize conversions are exact"
)]
pub fn g(value: f64, precision: usize) -> String {
    let p = precision.max(1);
    if value == 0.0 {
        return "0".into();
    }
    if !value.is_finite() {
        return if value.is_nan() {
            "nan".into()
        } else if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // The exponent after rounding to `p` significant digits decides the style.
    let sci = format!("{:.*e}", p - 1, value);
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if exp < -4 || exp >= p as i32 {
        let m = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `%{width}g` (right-aligned, precision 6).
pub fn g_width(value: f64, width: usize) -> String {
    format!("{:>width$}", g(value, 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_c_printf() {
        // Values checked against C's printf("%g").
        assert_eq!(g(0.14, 6), "0.14");
        assert_eq!(g(117_028.571_4, 6), "117029");
        assert_eq!(g(936_228.6, 6), "936229");
        assert_eq!(g(1_234_567.0, 6), "1.23457e+06");
        assert_eq!(g(0.000_012_34, 6), "1.234e-05");
        assert_eq!(g(100.0, 6), "100");
        assert_eq!(g(0.0, 6), "0");
        assert_eq!(g(99.5, 2), "1e+02");
        assert_eq!(g(5.55, 2), "5.5");
        assert_eq!(g(0.0123, 2), "0.012");
        assert_eq!(g_width(0.14, 9), "     0.14");
    }
}
