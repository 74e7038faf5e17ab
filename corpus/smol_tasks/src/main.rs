// smol_tasks - a smol (Debian's librust-smol-dev: async-executor 1.5,
// async-task 4.3, the machinery async-std runs on too) program whose core
// holds tasks parked the ways a service leaves them (issue 34).
//
// One Executor runs on two threads.  Main spawns the tasks below, waits
// until each reached its await, then spawns `crasher`, which aborts the
// process from inside a running task.  A second Executor is never run: the
// task spawned on it is never polled.  Before anything runs, the program
// prints what it spawned (the oracle the test reads, one line each):
//   TASK fn AWAIT:tag   parked at the line carrying `// AWAIT:tag`
//   TASK fn BODY:tag    never polled (Unresumed at `// BODY:tag`)
//   RUNNING fn          polled at the crash
//   CLOSED fn           cancelled (its Task dropped before it ran): not a task
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use smol::channel;
use smol::lock::Mutex;
use smol::{Executor, Timer};

static PARKED: AtomicUsize = AtomicUsize::new(0);
const PARKING: usize = 3;

#[inline(never)]
fn parked() {
    PARKED.fetch_add(1, Ordering::SeqCst);
}

#[inline(never)]
fn fatal(reason: usize) -> usize {
    if reason != 0 {
        std::process::abort();
    }
    reason
}

async fn recv_leaf(rx: channel::Receiver<u32>) -> u32 { // BODY:recv_leaf
    parked();
    rx.recv().await.unwrap_or(1) // AWAIT:recv_leaf
}

async fn recv_outer(rx: channel::Receiver<u32>) -> u32 { // BODY:recv_outer
    let r = recv_leaf(rx).await; // AWAIT:recv_outer
    r + 1
}

async fn sleeper(secs: u64) -> u32 { // BODY:sleeper
    parked();
    Timer::after(Duration::from_secs(secs)).await; // AWAIT:sleeper
    2
}

async fn locker(m: &'static Mutex<u32>) -> u32 { // BODY:locker
    parked();
    let g = m.lock().await; // AWAIT:locker
    *g + 3
}

async fn never_polled(id: u32) -> u32 { // BODY:never_polled
    Timer::after(Duration::from_millis(1)).await;
    id
}

async fn cancelled(id: u32) -> u32 {
    Timer::after(Duration::from_millis(1)).await;
    id + 4
}

async fn crasher() -> u32 {
    while PARKED.load(Ordering::SeqCst) < PARKING {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    fatal(PARKED.load(Ordering::SeqCst)) as u32
}

fn main() {
    println!("TASK recv_outer AWAIT:recv_outer");
    println!("TASK sleeper AWAIT:sleeper");
    println!("TASK locker AWAIT:locker");
    println!("TASK never_polled BODY:never_polled");
    println!("RUNNING crasher");
    println!("CLOSED cancelled");
    println!("DONE done_task");
    let ex: &'static Executor<'static> = Box::leak(Box::new(Executor::new()));
    let idle: &'static Executor<'static> = Box::leak(Box::new(Executor::new()));
    let mutex: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
    let guard = smol::block_on(mutex.lock());
    let (tx, rx) = channel::bounded::<u32>(1);
    let _never = idle.spawn(never_polled(11));
    drop(ex.spawn(cancelled(12)));
    let mut tasks = Vec::new();
    tasks.push(ex.spawn(recv_outer(rx)));
    tasks.push(ex.spawn(sleeper(3600)));
    tasks.push(ex.spawn(locker(mutex)));
    let _done = ex.spawn(done_task(13));
    for _ in 0..2 {
        std::thread::spawn(move || smol::block_on(ex.run(smol::future::pending::<()>())));
    }
    while PARKED.load(Ordering::SeqCst) < PARKING || DONE.load(Ordering::SeqCst) < 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let crash = ex.spawn(crasher());
    let r = smol::block_on(crash);
    drop(guard);
    let _ = tx.try_send(r);
    std::process::exit(r as i32);
}

// DONE fn (an oracle line): completed, its Task (the JoinHandle) held, so
// async-task keeps the allocation with its output: not a waiting task.
static DONE: AtomicUsize = AtomicUsize::new(0);

async fn done_task(id: u32) -> u32 {
    DONE.fetch_add(1, Ordering::SeqCst);
    id
}
