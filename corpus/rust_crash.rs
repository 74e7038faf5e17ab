// rust_crash.rs - three Rust crash sites for bucketing, chosen by argument:
//   index   an index out of bounds in crash_sites::parse_record  (a panic)
//   unwrap  unwrap() on None in crash_sites::decode_header        (a panic)
//   abort   std::process::abort() in crash_sites::give_up
// Built four ways (corpus/make-fleet-cores): panic=abort, and panic=unwind
// with a panic hook that aborts (--cfg abort_hook: how a service that must
// not go on after a panic leaves a core), each at opt-level 0 and 2.  Every
// build of one site must land in one bucket whose signature starts with the
// site's function, then its caller serve.
#![allow(unexpected_cfgs)]

mod crash_sites {
    #[inline(never)]
    pub fn parse_record(fields: &[u32], at: usize) -> u32 {
        fields[at] + 1
    }

    #[inline(never)]
    pub fn decode_header(tag: Option<u32>) -> u32 {
        tag.unwrap() * 2
    }

    #[inline(never)]
    pub fn give_up() {
        std::process::abort();
    }

    #[inline(never)]
    pub fn serve(site: &str) -> u32 {
        let fields = vec![1u32, 2, 3];
        let at = std::hint::black_box(fields.len() + 4);
        let tag: Option<u32> = std::hint::black_box(None);
        match site {
            "index" => parse_record(&fields, at),
            "unwrap" => decode_header(tag),
            _ => {
                give_up();
                0
            }
        }
    }
}

fn main() {
    #[cfg(abort_hook)]
    std::panic::set_hook(Box::new(|info| {
        eprintln!("fatal: {info}");
        std::process::abort();
    }));
    let site = std::env::args().nth(1).unwrap_or_default();
    let r = crash_sites::serve(&site);
    println!("{r}");
}
