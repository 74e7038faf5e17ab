// parking_lot_waits - corpus program (a cargo crate, built offline against
// Debian's librust-parking-lot-dev): parking_lot's Mutex and RwLock in a
// hang, for the wait-for graph (issue 50).  `parking_lot_waits SHAPE`:
//
//   mutex   "holder" locks Mutex M and sleeps; "waiter-0" and "waiter-1"
//           wait to lock M (RawMutex::lock_slow, parked)
//   rwlock  "reader" holds RwLock L shared and sleeps; "writer" waits to
//           write L (RawRwLock::lock_exclusive_slow, parked)
//   condvar "cv-0" and "cv-1" wait on Condvar CV (its Mutex CM released by
//           the wait) that nobody notifies (Condvar::wait_until_internal)
//
// A parked thread sleeps in a futex wait on its own ThreadParker word (in
// its parking_lot_core ThreadData), not on the lock: the lock is the key it
// parked on.  Neither lock records an owner (a state byte or word of flag
// bits and a reader count).  Once every waiter is blocked in futex
// (/proc/self/task/TID/syscall) main writes its own account to ./oracle,
// creates ./ready and sleeps in wait_for_watchdog until another process
// kills it with SIGABRT.  The oracle, one fact a line:
//
//   thread TID NAME                  a worker and its name
//   holds TID KIND ADDR SIZE N       TID holds the lock at ADDR (SIZE bytes)
//   waits TID KIND ADDR SIZE         TID is blocked taking it (KIND
//                                    parking-mutex, parking-rwlock-write,
//                                    parking-condvar)
//   verdict waiting
use std::io::Write;
use std::sync::mpsc::{channel, Sender};
use std::time::Duration;

static M: parking_lot::Mutex<u64> = parking_lot::const_mutex(0);
static L: parking_lot::RwLock<u64> = parking_lot::const_rwlock(0);
static CV: parking_lot::Condvar = parking_lot::Condvar::new();
static CM: parking_lot::Mutex<bool> = parking_lot::const_mutex(false);

fn gettid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()).expect("tid")
}

fn in_futex(tid: u32) -> bool {
    let nr = if cfg!(target_arch = "aarch64") { "98" } else { "202" };
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .map(|s| s.split_whitespace().next() == Some(nr))
        .unwrap_or(false)
}

fn wait_until_parked(tids: &[u32]) {
    for _ in 0..5000 {
        if tids.iter().all(|&t| in_futex(t)) {
            std::thread::sleep(Duration::from_millis(50));
            if tids.iter().all(|&t| in_futex(t)) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    eprintln!("parking_lot_waits: the workers never all parked");
    std::process::exit(3);
}

#[inline(never)]
fn hold_mutex(tid: Sender<u32>) {
    let g = M.lock();
    tid.send(gettid()).unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
        std::hint::black_box(&g);
    }
}

#[inline(never)]
fn lock_mutex(tid: Sender<u32>) {
    tid.send(gettid()).unwrap();
    let g = M.lock(); // never returns
    std::hint::black_box(&g);
}

#[inline(never)]
fn hold_read(tid: Sender<u32>) {
    let g = L.read();
    tid.send(gettid()).unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
        std::hint::black_box(&g);
    }
}

#[inline(never)]
fn lock_write(tid: Sender<u32>) {
    tid.send(gettid()).unwrap();
    let g = L.write(); // never returns
    std::hint::black_box(&g);
}

#[inline(never)]
fn wait_condvar(tid: Sender<u32>) {
    tid.send(gettid()).unwrap();
    let mut g = CM.lock();
    while !*g {
        CV.wait(&mut g);
    }
}

fn spawn(name: &str, body: fn(Sender<u32>)) -> u32 {
    let (tx, rx) = channel();
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
    let mut lines = vec![format!("shape parking-{shape}")];
    if shape == "mutex" {
        let (a, size) = (&M as *const _ as usize, std::mem::size_of_val(&M));
        let holder = spawn("holder", hold_mutex);
        let w0 = spawn("waiter-0", lock_mutex);
        let w1 = spawn("waiter-1", lock_mutex);
        wait_until_parked(&[w0, w1]);
        lines.push(format!("thread {holder} holder"));
        lines.push(format!("thread {w0} waiter-0"));
        lines.push(format!("thread {w1} waiter-1"));
        lines.push(format!("holds {holder} parking-mutex {a:#x} {size} 1"));
        lines.push(format!("waits {w0} parking-mutex {a:#x} {size}"));
        lines.push(format!("waits {w1} parking-mutex {a:#x} {size}"));
    } else if shape == "rwlock" {
        let (a, size) = (&L as *const _ as usize, std::mem::size_of_val(&L));
        let reader = spawn("reader", hold_read);
        let writer = spawn("writer", lock_write);
        wait_until_parked(&[writer]);
        lines.push(format!("thread {reader} reader"));
        lines.push(format!("thread {writer} writer"));
        lines.push(format!("holds {reader} parking-rwlock {a:#x} {size} 1"));
        lines.push(format!("waits {writer} parking-rwlock-write {a:#x} {size}"));
    } else if shape == "condvar" {
        let (a, size) = (&CV as *const _ as usize, std::mem::size_of_val(&CV));
        let t0 = spawn("cv-0", wait_condvar);
        let t1 = spawn("cv-1", wait_condvar);
        wait_until_parked(&[t0, t1]);
        lines.push(format!("thread {t0} cv-0"));
        lines.push(format!("thread {t1} cv-1"));
        lines.push(format!("waits {t0} parking-condvar {a:#x} {size}"));
        lines.push(format!("waits {t1} parking-condvar {a:#x} {size}"));
    } else {
        eprintln!("usage: parking_lot_waits mutex|rwlock|condvar");
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
