//! A rayon program ported to parbench-scheduler, one call at a time.
//!
//! Run it with `cargo run --release -p parbench-scheduler --example from_rayon`; set
//! `PARBENCH_NUM_THREADS` to change the global pool's size.

use std::error::Error;

use parbench_scheduler::{Strategy, ThreadPoolBuilder};

fn main() -> Result<(), Box<dyn Error>> {
    // rayon: ThreadPoolBuilder::new().num_threads(2).build()?
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("example-{i}"))
        .panic_handler(|_| eprintln!("a spawned task panicked"))
        .build()?;
    println!("pool of {} threads", pool.current_num_threads());

    // rayon: v.par_iter_mut().for_each(|x| *x = x.sqrt() * 1.5)
    let mut v: Vec<f64> = (0..1_000_000).map(f64::from).collect();
    pool.for_each_mut(&mut v, |x| *x = x.sqrt() * 1.5);
    println!("for_each_mut: v[16] = {}", v[16]);

    // rayon: v.par_chunks_mut(512).enumerate().for_each(|(k, chunk)| ..)
    pool.par_chunks_mut(&mut v, 512, |k, chunk| chunk.fill(k as f64));
    println!("par_chunks_mut: v[1024] = {} (chunk 2)", v[1024]);

    // rayon: (0..n).into_par_iter().map(f).collect::<Vec<_>>()
    let squares: Vec<u64> = pool.map_collect(0..1_000_000, |i| (i as u64) * (i as u64));
    println!("map_collect: squares[999] = {}", squares[999]);

    // rayon: v.par_sort_unstable()
    let mut keys: Vec<u64> = squares
        .iter()
        .map(|x| x.wrapping_mul(0x9E37_79B9))
        .collect();
    pool.sort_unstable(&mut keys);
    println!(
        "sort_unstable: sorted = {}",
        keys.windows(2).all(|w| w[0] <= w[1])
    );

    // Any strategy of the pool, e.g. OpenMP's dynamic schedule, for any algorithm:
    pool.for_each_mut_with(&Strategy::Dynamic { chunk: 4096 }, &mut keys, |k| *k /= 2);

    // rayon: pool.install(|| ..): free functions inside run on `pool`.
    let sum = pool.install(|| {
        parbench_scheduler::parallel_reduce(
            0..keys.len(),
            || 0u64,
            |i| u64::from(keys[i] % 3 == 0),
            |a, b| a + b,
        )
    });
    println!("install + parallel_reduce: {sum} keys divisible by 3");

    // rayon: pool.broadcast(|ctx| ctx.index())
    let workers = pool.broadcast(|ctx| format!("{}/{}", ctx.index(), ctx.num_threads()));
    println!("broadcast ran on workers {workers:?}");

    // rayon: rayon::join(a, b)
    let (left, right) = pool.join(
        || v[..10].iter().sum::<f64>(),
        || v[10..20].iter().sum::<f64>(),
    );
    println!("join: {left} + {right}");
    Ok(())
}
