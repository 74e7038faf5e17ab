// panic.rs - tests/systemd-real: a Rust panic, built with -C panic=abort so it ends in SIGABRT.
#[inline(never)]
fn check_input(v: &[u8]) -> u8 {
    if v.is_empty() {
        panic!("empty input");
    }
    v[0]
}

fn main() {
    let v: Vec<u8> = std::env::args().skip(1).map(|a| a.len() as u8).collect();
    println!("{}", check_input(&v));
}
