//! A small deterministic fuzzer for the listener targets: a seeded generator, mutations of valid
//! messages (bit flips, extreme bytes, length-like words at their limits, cuts, repeats, random
//! tails), and the corpus of inputs that once hurt a listener, kept as hex under
//! `tests/fuzz-corpus/<listener>/` and replayed before anything generated.

#![allow(
    clippy::cast_possible_truncation,
    reason = "random bytes and indices: keeping the low bits of a random u64 is the intent"
)]

use std::path::PathBuf;

/// xorshift64*: fast, seeded, the same sequence on every run.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is mapped to a fixed non-zero seed).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(0x9e37_79b9_7f4a_7c15))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Words a length or count field is most often wrong with.
const EXTREME_WORDS: [u32; 6] = [0, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x0100_0000];

/// One mutation of `seed`: a few random edits.
pub fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(7) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = [0x00, 0xff, 0x7f, 0x80][rng.below(4)];
            }
            2 if out.len() >= 4 => {
                let i = rng.below(out.len() - 3);
                let w = EXTREME_WORDS[rng.below(EXTREME_WORDS.len())];
                out[i..i + 4].copy_from_slice(&w.to_be_bytes());
            }
            3 if !out.is_empty() => out.truncate(rng.below(out.len())),
            4 if !out.is_empty() && out.len() < 1 << 16 => {
                let from = rng.below(out.len());
                let part = out[from..].to_vec();
                out.extend_from_slice(&part);
            }
            5 => out.extend((0..rng.below(64)).map(|_| rng.next_u64() as u8)),
            _ => {
                let n = rng.below(96);
                out = (0..n).map(|_| rng.next_u64() as u8).collect();
            }
        }
    }
    out
}

/// The inputs kept for `listener`: every `*.hex` file under `tests/fuzz-corpus/<listener>/`
/// (hex digits, whitespace and `#` comments ignored), in name order.
pub fn corpus(listener: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz-corpus")
        .join(listener);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "hex"));
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("corpus file");
            let digits: String = text
                .lines()
                .map(|l| l.split('#').next().unwrap_or(""))
                .flat_map(|l| l.chars().filter(char::is_ascii_hexdigit))
                .collect();
            let bytes = (0..digits.len() / 2)
                .map(|i| u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).expect("hex"))
                .collect();
            (p.file_name().unwrap().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

/// Resident memory (KiB) and threads of process `pid`, from /proc.
pub fn rss_and_threads(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("Threads:"))
}
