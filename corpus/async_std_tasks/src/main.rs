// async_std_tasks - an async-std (Debian's librust-async-std-dev: 1.12 on
// async-global-executor 2.3, async-executor 1.5 and async-task 4.3) program
// whose core holds tasks parked the ways a service leaves them (issue 34).
//
// async-std wraps each spawned future in its SupportTaskLocals (the task's
// locals and id) before async-global-executor spawns it on its global
// async-executor, which wraps it again.  The global executor runs on its own
// threads.  Main spawns the tasks below, waits until each reached its await
// (and the completed one finished, its JoinHandle held), cancels one, then
// spawns `crasher`, which aborts the process from inside a running task.
// Before anything runs, the program prints what it spawned (the oracle the
// test reads, one line each):
//   TASK fn AWAIT:tag   parked at the line carrying `// AWAIT:tag`
//   RUNNING fn          polled at the crash
//   DONE fn             completed, its JoinHandle held: not a waiting task
//   CLOSED fn           cancelled: not a task
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_std::channel;
use async_std::sync::Mutex;
use async_std::task;

static PARKED: AtomicUsize = AtomicUsize::new(0);
static DONE: AtomicUsize = AtomicUsize::new(0);
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
    task::sleep(Duration::from_secs(secs)).await; // AWAIT:sleeper
    2
}

async fn locker(m: &'static Mutex<u32>) -> u32 { // BODY:locker
    parked();
    let g = m.lock().await; // AWAIT:locker
    *g + 3
}

async fn done_task(id: u32) -> u32 {
    DONE.fetch_add(1, Ordering::SeqCst);
    id
}

async fn cancelled(secs: u64) -> u32 {
    task::sleep(Duration::from_secs(secs)).await;
    4
}

async fn crasher() -> u32 {
    std::thread::sleep(Duration::from_millis(200));
    fatal(PARKED.load(Ordering::SeqCst)) as u32
}

fn main() {
    println!("TASK recv_outer AWAIT:recv_outer");
    println!("TASK sleeper AWAIT:sleeper");
    println!("TASK locker AWAIT:locker");
    println!("RUNNING crasher");
    println!("DONE done_task");
    println!("CLOSED cancelled");
    // Two executor threads, whatever the machine (read when the first task spawns).
    std::env::set_var("ASYNC_GLOBAL_EXECUTOR_THREADS", "2");
    let mutex: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
    let guard = task::block_on(mutex.lock());
    let (tx, rx) = channel::bounded::<u32>(1);
    let done = task::spawn(done_task(12));
    let doomed = task::spawn(cancelled(3600));
    let mut tasks = Vec::new();
    tasks.push(task::spawn(recv_outer(rx)));
    tasks.push(task::spawn(sleeper(3600)));
    tasks.push(task::spawn(locker(mutex)));
    while PARKED.load(Ordering::SeqCst) < PARKING || DONE.load(Ordering::SeqCst) < 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    task::block_on(doomed.cancel());
    let r = task::block_on(task::spawn(crasher()));
    drop(guard);
    let _ = tx.try_send(r);
    drop(done);
    std::process::exit(r as i32);
}
