//! Four threads increment a counter behind each spin lock of this CPU's best backend, then an
//! atomic counter: run it with `cargo run --release -p parbench-atomics --example spin_counter`.

use std::error::Error;
use std::thread;
use std::time::Instant;

use parbench_atomics::{AtomicCounter, Backend, LockKind, SpinMutex};

const THREADS: usize = 4;
const INCREMENTS: u64 = 100_000;

fn main() -> Result<(), Box<dyn Error>> {
    let backend = Backend::best();
    println!(
        "backends on this CPU: {:?}; using {}",
        Backend::available(),
        backend.name()
    );
    for kind in [LockKind::Tas, LockKind::Ttas, LockKind::Ticket] {
        let counter = SpinMutex::new(kind, backend, 0_u64)?;
        let start = Instant::now();
        thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    for _ in 0..INCREMENTS {
                        *counter.lock() += 1;
                    }
                });
            }
        });
        let total = counter.into_inner();
        assert_eq!(total, THREADS as u64 * INCREMENTS);
        println!("{kind:?}: {total} increments in {:?}", start.elapsed());
    }
    let counter = AtomicCounter::new(backend)?;
    thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                for _ in 0..INCREMENTS {
                    counter.fetch_add(1);
                }
            });
        }
    });
    println!("AtomicCounter: {}", counter.load());
    Ok(())
}
