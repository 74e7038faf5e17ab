// rust_waits.rs - corpus program: Rust std::sync's RwLock and Condvar in a
// hang, for the wait-for graph (issue 50).  `rust_waits SHAPE`:
//
//   rwlock   "reader" holds RwLock L shared and sleeps; "writer" waits to
//            write L (RwLock::write_contended, on L's writer_notify word);
//            then "late-reader" waits to read L behind the waiting writer
//            (read_contended, on L's state word)
//   condvar  "cv-0" and "cv-1" wait on one Condvar nobody notifies (its
//            Mutex, released by the wait, is free)
//
// Rust's RwLock and Condvar are futex words: neither records an owner, so
// what a core can say is what each thread waits on, never who holds it.
// Once every waiter is blocked in futex (/proc/self/task/TID/syscall) and
// the reader sleeps, main writes its own account to ./oracle, creates
// ./ready and sleeps in wait_for_watchdog until another process kills it
// with SIGABRT.  The oracle, one fact a line (as corpus/deadlock.c):
//
//   thread TID NAME                 a worker and its name
//   holds TID rust-rwlock ADDR SIZE 1   TID reads the RwLock at ADDR (SIZE bytes)
//   waits TID KIND ADDR SIZE        TID is blocked on the object at ADDR
//                                   (KIND rust-rwlock-write, rust-rwlock-read,
//                                   rust-condvar; its futex word lies inside)
//   verdict waiting                 no cycle, and no owner recorded
use std::io::Write;
use std::sync::{Condvar, Mutex, RwLock};
use std::time::Duration;

static L: RwLock<u64> = RwLock::new(0);
static CV: Condvar = Condvar::new();
static CV_MUTEX: Mutex<bool> = Mutex::new(false);

fn gettid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()).expect("tid")
}

fn blocked_in(tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
}

fn futex_nr() -> &'static str {
    if cfg!(target_arch = "aarch64") { "98" } else { "202" }
}

fn wait_until(tids: &[u32], nr: &str) {
    for _ in 0..5000 {
        if tids.iter().all(|&t| blocked_in(t).as_deref() == Some(nr)) {
            std::thread::sleep(Duration::from_millis(50));
            if tids.iter().all(|&t| blocked_in(t).as_deref() == Some(nr)) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    eprintln!("rust_waits: the workers never all blocked");
    std::process::exit(3);
}

#[inline(never)]
fn read_and_sleep(tid: std::sync::mpsc::Sender<u32>) {
    let g = L.read().unwrap();
    tid.send(gettid()).unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
        std::hint::black_box(&g);
    }
}

#[inline(never)]
fn write_lock(tid: std::sync::mpsc::Sender<u32>) {
    tid.send(gettid()).unwrap();
    let g = L.write().unwrap(); // never returns
    std::hint::black_box(&g);
}

#[inline(never)]
fn late_read(tid: std::sync::mpsc::Sender<u32>) {
    tid.send(gettid()).unwrap();
    let g = L.read().unwrap(); // never returns: a writer waits
    std::hint::black_box(&g);
}

#[inline(never)]
fn wait_condvar(tid: std::sync::mpsc::Sender<u32>) {
    tid.send(gettid()).unwrap();
    let mut g = CV_MUTEX.lock().unwrap();
    while !*g {
        g = CV.wait(g).unwrap();
    }
}

fn spawn(name: &str, body: fn(std::sync::mpsc::Sender<u32>)) -> u32 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new().name(name.into()).spawn(move || body(tx)).unwrap();
    rx.recv().unwrap()
}

#[inline(never)]
fn wait_for_watchdog() {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn main() {
    let shape = std::env::args().nth(1).unwrap_or_default();
    let mut lines = vec![format!("shape rust-{shape}")];
    if shape == "rwlock" {
        let (a, size) = (&L as *const RwLock<u64> as usize, std::mem::size_of::<RwLock<u64>>());
        let reader = spawn("reader", read_and_sleep);
        let writer = spawn("writer", write_lock);
        wait_until(&[writer], futex_nr());
        let late = spawn("late-reader", late_read);
        wait_until(&[writer, late], futex_nr());
        lines.push(format!("thread {reader} reader"));
        lines.push(format!("thread {writer} writer"));
        lines.push(format!("thread {late} late-reader"));
        lines.push(format!("holds {reader} rust-rwlock {a:#x} {size} 1"));
        lines.push(format!("waits {writer} rust-rwlock-write {a:#x} {size}"));
        lines.push(format!("waits {late} rust-rwlock-read {a:#x} {size}"));
    } else if shape == "condvar" {
        let (a, size) = (&CV as *const Condvar as usize, std::mem::size_of::<Condvar>());
        let t0 = spawn("cv-0", wait_condvar);
        let t1 = spawn("cv-1", wait_condvar);
        wait_until(&[t0, t1], futex_nr());
        lines.push(format!("thread {t0} cv-0"));
        lines.push(format!("thread {t1} cv-1"));
        lines.push(format!("waits {t0} rust-condvar {a:#x} {size}"));
        lines.push(format!("waits {t1} rust-condvar {a:#x} {size}"));
    } else {
        eprintln!("usage: rust_waits rwlock|condvar");
        std::process::exit(2);
    }
    lines.push("verdict waiting".into());
    let mut f = std::fs::File::create("oracle.tmp").unwrap();
    for l in &lines {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    std::fs::rename("oracle.tmp", "oracle").unwrap();
    std::fs::File::create("ready").unwrap();
    wait_for_watchdog();
}
