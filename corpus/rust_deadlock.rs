// rust_deadlock.rs - corpus program: an ABBA deadlock on two
// std::sync::Mutex, for the wait-for graph (issue 35).
//
// Thread "a-then-b" locks A, then B; "b-then-a" locks B, then A; a barrier
// between the two locks makes the cycle certain.  Rust's std Mutex on Linux
// is one futex word (0 unlocked, 1 locked, 2 locked with waiters) and a
// poison flag: it records no owner, so a core cannot say who holds it.
//
// Once both workers are blocked in the kernel (/proc/self/task/TID/syscall
// says futex, 202 on x86_64, 98 on aarch64), main writes its own account to
// ./oracle, creates ./ready and sleeps in wait_for_watchdog until another
// process kills it with SIGABRT, as a watchdog would.  The oracle, one fact a
// line (as corpus/deadlock.c writes it):
//
//   thread TID NAME                a worker and its name
//   holds TID rust-mutex ADDR SIZE TID holds the Mutex at ADDR (SIZE bytes:
//                                  the futex word is somewhere inside)
//   waits TID rust-mutex ADDR SIZE TID is blocked locking it
//   verdict deadlock
use std::io::Write;
use std::sync::{Barrier, Mutex};
use std::time::Duration;

static A: Mutex<()> = Mutex::new(());
static B: Mutex<()> = Mutex::new(());
static BOTH_HOLD: Barrier = Barrier::new(3);

/// This thread's tid: /proc/thread-self is a link to PID/task/TID.
fn gettid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()).expect("tid")
}

#[inline(never)]
fn take_both(first: &'static Mutex<()>, second: &'static Mutex<()>, tid: &Mutex<u32>) {
    *tid.lock().unwrap() = gettid();
    let _first = first.lock().unwrap();
    BOTH_HOLD.wait();
    let _second = second.lock().unwrap(); // never returns
    std::hint::black_box(&_second);
}

fn futex_nr() -> &'static str {
    if cfg!(target_arch = "aarch64") { "98" } else { "202" }
}

fn blocked_in_futex(tid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .map(|s| s.split_whitespace().next() == Some(futex_nr()))
        .unwrap_or(false)
}

#[inline(never)]
fn write_oracle(ab: u32, ba: u32) {
    let size = std::mem::size_of::<Mutex<()>>();
    let (a, b) = (&A as *const Mutex<()> as usize, &B as *const Mutex<()> as usize);
    let mut f = std::fs::File::create("oracle.tmp").unwrap();
    writeln!(f, "shape rust-abba").unwrap();
    writeln!(f, "thread {ab} a-then-b").unwrap();
    writeln!(f, "thread {ba} b-then-a").unwrap();
    writeln!(f, "holds {ab} rust-mutex {a:#x} {size} 1").unwrap();
    writeln!(f, "waits {ab} rust-mutex {b:#x} {size}").unwrap();
    writeln!(f, "holds {ba} rust-mutex {b:#x} {size} 1").unwrap();
    writeln!(f, "waits {ba} rust-mutex {a:#x} {size}").unwrap();
    writeln!(f, "verdict deadlock").unwrap();
    drop(f);
    std::fs::rename("oracle.tmp", "oracle").unwrap();
}

#[inline(never)]
fn wait_for_watchdog() {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn main() {
    static TID_AB: Mutex<u32> = Mutex::new(0);
    static TID_BA: Mutex<u32> = Mutex::new(0);
    std::thread::Builder::new()
        .name("a-then-b".into())
        .spawn(|| take_both(&A, &B, &TID_AB))
        .unwrap();
    std::thread::Builder::new()
        .name("b-then-a".into())
        .spawn(|| take_both(&B, &A, &TID_BA))
        .unwrap();
    BOTH_HOLD.wait();
    let (ab, ba) = (*TID_AB.lock().unwrap(), *TID_BA.lock().unwrap());
    let mut tries = 0;
    loop {
        if blocked_in_futex(ab) && blocked_in_futex(ba) {
            std::thread::sleep(Duration::from_millis(50));
            if blocked_in_futex(ab) && blocked_in_futex(ba) {
                break;
            }
        }
        tries += 1;
        if tries > 5000 {
            eprintln!("rust_deadlock: the workers never both blocked");
            std::process::exit(3);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // A thread that exits writes the oracle: the Mutexes' addresses are then
    // on no live stack but the workers' (coreq infers an owner from the one
    // thread whose stack points to a taken Mutex; a stale copy in main's
    // frame would make two).
    std::thread::spawn(move || write_oracle(ab, ba)).join().unwrap();
    std::fs::File::create("ready").unwrap();
    wait_for_watchdog();
}
