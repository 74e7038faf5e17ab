// tokio_local - a tokio (Debian's librust-tokio-dev) program on the
// current_thread runtime with LocalSets (issue 34): tasks spawned with
// spawn_local live in a LocalSet's own list (LocalOwnedTasks), a task
// spawned with tokio::spawn in the current_thread scheduler's list, and a
// second LocalSet that is never run holds a task never polled.  One thread
// runs everything; a local task aborts the process once the others parked.
// Before anything runs, the program prints what it made (the oracle the
// test reads, one line each):
//   BLOCK_ON fn AWAIT:tag   the future LocalSet::block_on drives
//   TASK fn AWAIT:tag       a task parked at the line carrying `// AWAIT:tag`
//   TASK fn BODY:tag        a task never polled (Unresumed at `// BODY:tag`)
//   RUNNING fn              the task being polled at the crash
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{oneshot, Notify};
use tokio::task::LocalSet;

static PARKED: AtomicUsize = AtomicUsize::new(0);
const PARKING: usize = 4;

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

async fn local_leaf(rx: oneshot::Receiver<u32>) -> u32 { // BODY:local_leaf
    parked();
    rx.await.unwrap_or(1) // AWAIT:local_leaf
}

async fn local_outer(rx: oneshot::Receiver<u32>) -> u32 { // BODY:local_outer
    let r = local_leaf(rx).await; // AWAIT:local_outer
    r + 1
}

async fn local_sleeper(secs: u64) -> u32 { // BODY:local_sleeper
    parked();
    tokio::time::sleep(Duration::from_secs(secs)).await; // AWAIT:local_sleeper
    2
}

// Holds an Rc: a future only a LocalSet can run.
async fn rc_holder(n: Rc<Notify>) -> u32 { // BODY:rc_holder
    parked();
    n.notified().await; // AWAIT:rc_holder
    Rc::strong_count(&n) as u32
}

// Spawned with tokio::spawn: in the current_thread scheduler's own list.
async fn shared_waiter(rx: oneshot::Receiver<u32>) -> u32 { // BODY:shared_waiter
    parked();
    rx.await.unwrap_or(4) // AWAIT:shared_waiter
}

async fn never_polled(id: u32) -> u32 { // BODY:never_polled
    tokio::time::sleep(Duration::from_millis(1)).await;
    id
}

async fn crasher() -> u32 {
    fatal(PARKED.load(Ordering::SeqCst)) as u32
}

async fn local_main(idle: &LocalSet) -> u32 { // BODY:local_main
    let (tx1, rx1) = oneshot::channel::<u32>();
    let (tx2, rx2) = oneshot::channel::<u32>();
    let notify = Rc::new(Notify::new());
    let _never = idle.spawn_local(never_polled(11));
    let mut tasks = Vec::new();
    tasks.push(tokio::task::spawn_local(local_outer(rx1)));
    tasks.push(tokio::task::spawn_local(local_sleeper(3600)));
    tasks.push(tokio::task::spawn_local(rc_holder(notify.clone())));
    tasks.push(tokio::spawn(shared_waiter(rx2)));
    while PARKED.load(Ordering::SeqCst) < PARKING {
        tokio::task::yield_now().await;
    }
    let crash = tokio::task::spawn_local(crasher());
    let r = crash.await.unwrap_or(0); // AWAIT:local_main
    let _ = tx1.send(r);
    let _ = tx2.send(r);
    notify.notify_one();
    r
}

fn main() {
    println!("BLOCK_ON local_main AWAIT:local_main");
    println!("TASK local_outer AWAIT:local_outer");
    println!("TASK local_sleeper AWAIT:local_sleeper");
    println!("TASK rc_holder AWAIT:rc_holder");
    println!("TASK shared_waiter AWAIT:shared_waiter");
    println!("TASK never_polled BODY:never_polled");
    println!("RUNNING crasher");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = LocalSet::new();
    let idle = LocalSet::new();
    let r = local.block_on(&rt, local_main(&idle));
    std::process::exit(r as i32);
}
