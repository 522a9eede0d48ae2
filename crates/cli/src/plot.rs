//! Figures from a sweep report, as SVG or PNG. Per kernel, one row of three panels:
//! - box plots of the run times of every scheduler × threads cell (time axis logarithmic, because
//!   schedulers differ by orders of magnitude: a thread per task against work stealing);
//! - speed-up over `seq` against the thread count, one line per scheduler, ideal speed-up dashed;
//! - a scheduler comparison per thread count: bars of each scheduler's median time relative to
//!   `seq`'s median at the same thread count (log scale, below 1 = faster than seq), with the
//!   distribution-free 95 % interval of the median as whiskers.
//!
//! Every panel colours by scheduler with the same colour per scheduler ([`scheduler_colour`]),
//! every axis is labelled, and a kernel whose problem grows with the thread count (recorded by
//! the sweep as `<kernel>.weak_scaling`) says so in its titles.
//!
//! The figure is drawn from the report's statistics, not recomputed: the box spans p25–p75, the
//! bar inside is the median, the whiskers reach p5 and p95 — the same numbers the tables print.
//! Text is measured (SVG) and rasterised (PNG) with the DejaVu Sans font embedded in the binary
//! (`assets/`, with its licence), so no system font library is needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use thiserror::Error;

use crate::error::CliError;
use crate::export::text_grid::format_seconds;
use crate::results::{Cell, Report};
use crate::stats::Summary;

/// Width of the whole figure in pixels.
const WIDTH: u32 = 1800;
/// Height of one kernel's row of panels in pixels.
const ROW_HEIGHT: u32 = 460;
/// Half the width of a box, in category units (a category is 1 wide).
const BOX_HALF_WIDTH: f64 = 0.3;
/// The scheduler every comparison is normalised to.
const BASELINE: &str = "seq";

/// The font of every figure: DejaVu Sans (free licence in `assets/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Registers the embedded font as plotters' `sans-serif`; every figure calls this before drawing.
pub(crate) fn ensure_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The embedded font is a valid TrueType file; should a future plotters reject it, text
        // would fail to draw and that error is reported by the drawing call itself.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Why a report cannot be drawn.
#[derive(Debug, Error)]
pub enum PlotError {
    /// No cell of the report has statistics to draw.
    #[error("the report has no measured cells to plot")]
    NothingToPlot,
    /// A measured cell lacks a label the figure is organised by.
    #[error("a measured cell has no '{0}' label (is this a sweep report?)")]
    MissingLabel(&'static str),
    /// The `threads` label is not a positive integer.
    #[error("a cell's 'threads' label '{0}' is not a positive integer")]
    BadThreads(String),
    /// plotters failed while drawing.
    #[error("drawing failed: {0}")]
    Draw(String),
}

/// One measured cell with the labels the figure needs, parsed.
struct Point<'a> {
    kernel: &'a str,
    scheduler: &'a str,
    threads: usize,
    summary: &'a Summary,
    speedup: Option<f64>,
}

/// The colour of a scheduler in every figure: its position among the known schedulers, so that
/// `rayon` has the same colour in every panel and every report.
///
/// ```
/// use parbench_cli::plot::scheduler_colour;
/// assert_eq!(scheduler_colour("rayon"), scheduler_colour("rayon"));
/// assert_ne!(scheduler_colour("rayon"), scheduler_colour("tree"));
/// ```
pub fn scheduler_colour(scheduler: &str) -> RGBAColor {
    if scheduler == BASELINE {
        // The baseline in dark grey: the palette's pale pink for it was hard to see.
        return RGBColor(70, 70, 70).to_rgba();
    }
    let index = parbench_kernels::ExecutorKind::ALL
        .iter()
        .position(|kind| kind.name() == scheduler)
        .unwrap_or_else(|| {
            // Unknown names (a report from a newer version) still get a stable colour.
            parbench_kernels::ExecutorKind::ALL.len()
                + scheduler.bytes().map(usize::from).sum::<usize>() % 16
        });
    Palette99::pick(index).to_rgba()
}

/// Draws `report` as an SVG document.
///
/// ```
/// use parbench_cli::plot::render_svg;
/// use parbench_cli::results::{Cell, Report};
/// let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
/// let labels = [("kernel", "reduce"), ("scheduler", "tree"), ("threads", "2")];
/// report.cells.push(Cell::measured(&labels, vec![1e-3, 2e-3]));
/// let svg = render_svg(&report).unwrap();
/// assert!(svg.starts_with("<svg"));
/// ```
pub fn render_svg(report: &Report) -> Result<String, PlotError> {
    let points = measured_points(report)?;
    let height = ROW_HEIGHT * kernels_of(&points).len() as u32;
    let mut svg = String::new();
    {
        ensure_font();
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        draw_figure(&root, report, &points)?;
    }
    Ok(svg)
}

/// Draws `report` as a PNG image at `path`.
///
/// # Errors
/// As [`render_svg`], and [`PlotError::Draw`] when the file cannot be written.
pub fn render_png(report: &Report, path: &Path) -> Result<(), PlotError> {
    let points = measured_points(report)?;
    let height = ROW_HEIGHT * kernels_of(&points).len() as u32;
    ensure_font();
    let root = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
    draw_figure(&root, report, &points)
}

/// The bytes of a PNG image that `draw` draws into the file it is given. plotters' encoder writes
/// only to files, so the image goes to a file of this process's own in the temp directory, read
/// back and removed; the caller writes the bytes where they belong (a device, a link, a rescue on
/// failure: `ResultsFile`).
///
/// # Errors
/// `draw`'s error, or [`CliError::Write`] when the temporary image cannot be read.
pub(crate) fn png_bytes(
    draw: impl FnOnce(&Path) -> Result<(), CliError>,
) -> Result<Vec<u8>, CliError> {
    // The encoder picks the format by extension, so the temporary name keeps `.png`.
    let temporary =
        std::env::temp_dir().join(format!("parbench-figure-{}.png", std::process::id()));
    let bytes = draw(&temporary).and_then(|()| {
        std::fs::read(&temporary).map_err(|source| CliError::Write {
            path: temporary.clone(),
            source,
        })
    });
    // Ours alone; nothing is lost if it stays.
    let _ = std::fs::remove_file(&temporary);
    bytes
}

fn kernels_of<'a>(points: &[Point<'a>]) -> Vec<&'a str> {
    let mut kernels: Vec<&str> = Vec::new();
    for point in points {
        if !kernels.contains(&point.kernel) {
            kernels.push(point.kernel);
        }
    }
    kernels
}

fn draw_figure<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
    points: &[Point],
) -> Result<(), PlotError> {
    root.fill(&WHITE).map_err(draw_error)?;
    let kernels = kernels_of(points);
    let rows = root.split_evenly((kernels.len(), 1));
    for (kernel, row) in kernels.iter().zip(&rows) {
        let cells: Vec<&Point> = points.iter().filter(|p| p.kernel == *kernel).collect();
        let weak = report
            .metadata
            .settings
            .get(&format!("{kernel}.weak_scaling"))
            .is_some_and(|v| v == "true");
        let heading = if weak {
            format!("{kernel} — weak scaling: problem grows with threads")
        } else {
            (*kernel).to_owned()
        };
        let row = row
            .titled(&heading, ("sans-serif", 20))
            .map_err(draw_error)?;
        let (left, rest) = row.split_horizontally(WIDTH * 2 / 5);
        let (middle, right) = rest.split_horizontally(WIDTH / 4);
        draw_boxes(&left, "time per run", &cells)?;
        draw_speedup(&middle, "speed-up over seq", &cells)?;
        draw_comparison(&right, "time relative to seq, per thread count", &cells)?;
    }
    root.present().map_err(draw_error)
}

fn required_label<'a>(cell: &'a Cell, name: &'static str) -> Result<&'a str, PlotError> {
    cell.label(name).ok_or(PlotError::MissingLabel(name))
}

pub(crate) fn draw_error(error: impl std::fmt::Display) -> PlotError {
    PlotError::Draw(error.to_string())
}

fn measured_points(report: &Report) -> Result<Vec<Point<'_>>, PlotError> {
    let mut points = Vec::new();
    for cell in &report.cells {
        let Some(summary) = &cell.summary else {
            continue;
        };
        let threads_text = required_label(cell, "threads")?;
        let threads = threads_text
            .parse::<usize>()
            .ok()
            .filter(|&t| t > 0)
            .ok_or_else(|| PlotError::BadThreads(threads_text.to_owned()))?;
        points.push(Point {
            kernel: required_label(cell, "kernel")?,
            scheduler: required_label(cell, "scheduler")?,
            threads,
            summary,
            speedup: cell.relative.map(|r| r.speedup).filter(|s| s.is_finite()),
        });
    }
    if points.is_empty() {
        return Err(PlotError::NothingToPlot);
    }
    Ok(points)
}

/// `summary` with every time replaced by its base-10 logarithm, for a log axis drawn as a linear
/// axis of exponents: plotters' own log axis can end up with no tick labels at all on a narrow
/// range (a kernel whose cells all lie within one decade), this one always has them.
fn log10_summary(s: &Summary) -> Summary {
    let log = |x: f64| x.max(1e-15).log10();
    Summary {
        mean: log(s.mean),
        median: log(s.median),
        ci95_low: s.ci95_low.map(log),
        ci95_high: s.ci95_high.map(log),
        min: log(s.min),
        max: log(s.max),
        p5: log(s.p5),
        p25: log(s.p25),
        p75: log(s.p75),
        p95: log(s.p95),
        median_ci95_low: s.median_ci95_low.map(log),
        median_ci95_high: s.median_ci95_high.map(log),
        ..s.clone()
    }
}

/// A padded range of exponents around `low..high` (already log10), at least 0.2 decades wide.
fn padded_log_range(low: f64, high: f64) -> std::ops::Range<f64> {
    let centre = (low + high) / 2.0;
    let half = ((high - low) / 2.0).max(0.1) * 1.15;
    centre - half..centre + half
}

/// Box plots of run times, one box per cell in measurement order, coloured by scheduler.
fn draw_boxes<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    cells: &[&Point],
) -> Result<(), PlotError> {
    let logs: Vec<Summary> = cells.iter().map(|c| log10_summary(c.summary)).collect();
    let low = logs.iter().map(|s| s.min).fold(f64::INFINITY, f64::min);
    let high = logs.iter().map(|s| s.max).fold(f64::NEG_INFINITY, f64::max);
    let names: Vec<String> = cells
        .iter()
        .map(|c| format!("{} ×{}", c.scheduler, c.threads))
        .collect();
    let category_label = |x: &f64| {
        let index = x.round();
        if (x - index).abs() > 0.01 || index < 0.0 {
            return String::new();
        }
        names.get(index as usize).cloned().unwrap_or_default()
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(120)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..cells.len() as f64 - 0.5, padded_log_range(low, high))
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(cells.len())
        .x_label_formatter(&category_label)
        .x_label_style(
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .x_desc("scheduler × threads")
        .axis_desc_style(("sans-serif", 14))
        .y_labels(8)
        .y_desc("time per run (log scale)")
        .y_label_formatter(&|y| format_seconds(10f64.powf(*y)))
        .draw()
        .map_err(draw_error)?;
    for (index, (cell, log)) in cells.iter().zip(&logs).enumerate() {
        draw_box(
            &mut chart,
            index as f64,
            log,
            scheduler_colour(cell.scheduler),
            false,
        )?;
    }
    Ok(())
}

/// One box at `x`: p25–p75 filled in `colour`, the median as a bar, whiskers at p5 and p95; with
/// `mean_with_ci`, also the mean as a dot with its 95 % confidence interval as an error bar (the
/// INNCABS study's box plots). Shared by every figure that draws run-time distributions.
pub(crate) fn draw_box<DB: DrawingBackend, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    x: f64,
    s: &Summary,
    colour: RGBAColor,
    mean_with_ci: bool,
) -> Result<(), PlotError>
where
    Y: Ranged<ValueType = f64>,
{
    let whisker = PathElement::new(vec![(x, s.p5), (x, s.p95)], BLACK.stroke_width(1));
    let caps = [s.p5, s.p95].map(|y| {
        PathElement::new(
            vec![(x - BOX_HALF_WIDTH / 2.0, y), (x + BOX_HALF_WIDTH / 2.0, y)],
            BLACK.stroke_width(1),
        )
    });
    let quartiles = Rectangle::new(
        [(x - BOX_HALF_WIDTH, s.p25), (x + BOX_HALF_WIDTH, s.p75)],
        colour.mix(0.5).filled(),
    );
    let outline = Rectangle::new(
        [(x - BOX_HALF_WIDTH, s.p25), (x + BOX_HALF_WIDTH, s.p75)],
        colour.stroke_width(1),
    );
    let median = PathElement::new(
        vec![
            (x - BOX_HALF_WIDTH, s.median),
            (x + BOX_HALF_WIDTH, s.median),
        ],
        BLACK.stroke_width(2),
    );
    // Box first, then the lines on top of it.
    chart
        .draw_series([quartiles, outline])
        .map_err(draw_error)?;
    chart.draw_series([whisker, median]).map_err(draw_error)?;
    chart.draw_series(caps).map_err(draw_error)?;
    if mean_with_ci {
        let mean_x = x + BOX_HALF_WIDTH * 0.6;
        if let (Some(low), Some(high)) = (s.ci95_low, s.ci95_high) {
            let bar = PathElement::new(vec![(mean_x, low), (mean_x, high)], RED.stroke_width(2));
            chart.draw_series([bar]).map_err(draw_error)?;
        }
        chart
            .draw_series([Circle::new((mean_x, s.mean), 3, RED.filled())])
            .map_err(draw_error)?;
    }
    Ok(())
}

/// Speed-up over `seq` against threads, a line per scheduler, the ideal speed-up dashed.
fn draw_speedup<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    cells: &[&Point],
) -> Result<(), PlotError> {
    let max_threads = cells.iter().map(|c| c.threads).max().unwrap_or(1);
    let top = cells
        .iter()
        .filter_map(|c| c.speedup)
        .fold(max_threads as f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(0.5..max_threads as f64 + 0.5, 0.0..top)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .x_labels(max_threads.min(16))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .x_desc("threads")
        .y_desc("speed-up (median seq / median)")
        .draw()
        .map_err(draw_error)?;
    let ideal = [(1.0, 1.0), (max_threads as f64, max_threads as f64)];
    chart
        .draw_series(DashedLineSeries::new(ideal, 6, 4, BLACK.mix(0.4).into()))
        .map_err(draw_error)?
        .label("ideal")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    let mut schedulers: Vec<&str> = Vec::new();
    for cell in cells {
        if !schedulers.contains(&cell.scheduler) {
            schedulers.push(cell.scheduler);
        }
    }
    for scheduler in &schedulers {
        let mut line: Vec<(f64, f64)> = cells
            .iter()
            .filter(|c| c.scheduler == *scheduler)
            .filter_map(|c| c.speedup.map(|s| (c.threads as f64, s)))
            .collect();
        if line.is_empty() {
            continue;
        }
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        let colour = scheduler_colour(scheduler);
        chart
            .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
            .map_err(draw_error)?
            .label(*scheduler)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        chart
            .draw_series(line.into_iter().map(|p| Circle::new(p, 3, colour.filled())))
            .map_err(draw_error)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw_error)
}

/// Per thread count, one bar per scheduler: its median time over `seq`'s median at the same
/// thread count (or, failing that, on one thread), on a log scale around 1, with the 95 % interval
/// of the median as whiskers. Below the dashed line at 1 a scheduler is faster than `seq`.
fn draw_comparison<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    cells: &[&Point],
) -> Result<(), PlotError> {
    let mut threads: Vec<usize> = cells.iter().map(|c| c.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut schedulers: Vec<&str> = Vec::new();
    for cell in cells {
        if cell.scheduler != BASELINE && !schedulers.contains(&cell.scheduler) {
            schedulers.push(cell.scheduler);
        }
    }
    let baseline = |threads: usize| {
        let find = |t: usize| {
            cells
                .iter()
                .find(|c| c.scheduler == BASELINE && c.threads == t)
                .map(|c| c.summary.median)
        };
        find(threads).or_else(|| find(1))
    };
    // (group, slot, log10 ratio, log10 whisker low, log10 whisker high, scheduler)
    let mut bars = Vec::new();
    for (group, &t) in threads.iter().enumerate() {
        let Some(seq) = baseline(t).filter(|&m| m > 0.0) else {
            continue;
        };
        for (slot, scheduler) in schedulers.iter().enumerate() {
            let Some(cell) = cells
                .iter()
                .find(|c| c.scheduler == *scheduler && c.threads == t)
            else {
                continue;
            };
            let s = cell.summary;
            let log = |x: f64| (x / seq).max(1e-12).log10();
            bars.push((
                group,
                slot,
                log(s.median),
                s.median_ci95_low.map(log),
                s.median_ci95_high.map(log),
                *scheduler,
            ));
        }
    }
    let low = bars.iter().map(|b| b.3.unwrap_or(b.2)).fold(0.0, f64::min);
    let high = bars.iter().map(|b| b.4.unwrap_or(b.2)).fold(0.0, f64::max);
    let group_labels: Vec<String> = threads
        .iter()
        .map(|&t| format!("{t} thread{}", if t == 1 { "" } else { "s" }))
        .collect();
    let group_label = |x: &f64| {
        let index = x.round();
        if (x - index).abs() > 0.01 || index < 0.0 {
            return String::new();
        }
        group_labels
            .get(index as usize)
            .cloned()
            .unwrap_or_default()
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(
            -0.5..threads.len() as f64 - 0.5,
            padded_log_range(low, high),
        )
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(threads.len())
        .x_label_formatter(&group_label)
        .x_desc("thread count (bars: schedulers; whiskers: 95 % CI of the median)")
        .y_labels(8)
        .y_desc("median time / seq median (log; < 1 = faster)")
        .y_label_formatter(&|y| format!("{:.2}", 10f64.powf(*y)))
        .draw()
        .map_err(draw_error)?;
    chart
        .draw_series(DashedLineSeries::new(
            [(-0.5, 0.0), (threads.len() as f64 - 0.5, 0.0)],
            6,
            4,
            BLACK.mix(0.6).into(),
        ))
        .map_err(draw_error)?;
    let width = 0.8 / schedulers.len().max(1) as f64;
    let mut legend_done: Vec<&str> = Vec::new();
    for (group, slot, value, whisker_low, whisker_high, scheduler) in bars {
        let left = group as f64 - 0.4 + slot as f64 * width;
        let (x0, x1) = (left + width * 0.1, left + width * 0.9);
        let colour = scheduler_colour(scheduler);
        let series = chart
            .draw_series([Rectangle::new([(x0, 0.0), (x1, value)], colour.filled())])
            .map_err(draw_error)?;
        if !legend_done.contains(&scheduler) {
            legend_done.push(scheduler);
            series.label(scheduler).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled())
            });
        }
        if let (Some(lo), Some(hi)) = (whisker_low, whisker_high) {
            let centre = (x0 + x1) / 2.0;
            let cap = (x1 - x0) / 4.0;
            chart
                .draw_series([
                    PathElement::new(vec![(centre, lo), (centre, hi)], BLACK.stroke_width(1)),
                    PathElement::new(
                        vec![(centre - cap, lo), (centre + cap, lo)],
                        BLACK.stroke_width(1),
                    ),
                    PathElement::new(
                        vec![(centre - cap, hi), (centre + cap, hi)],
                        BLACK.stroke_width(1),
                    ),
                ])
                .map_err(draw_error)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Relative;

    fn cell(kernel: &str, scheduler: &str, threads: &str, samples: Vec<f64>) -> Cell {
        let labels = [
            ("kernel", kernel),
            ("scheduler", scheduler),
            ("threads", threads),
        ];
        Cell::measured(&labels, samples)
    }

    fn sweep_report() -> Report {
        let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
        for kernel in ["reduce", "scan"] {
            for (scheduler, threads, time) in
                [("seq", "1", 4e-3), ("tree", "1", 4e-3), ("tree", "2", 2e-3)]
            {
                let mut c = cell(
                    kernel,
                    scheduler,
                    threads,
                    vec![time, time * 1.1, time * 0.9],
                );
                let t = threads.parse().unwrap();
                c.relative = Some(Relative::against(4e-3, time, t));
                report.cells.push(c);
            }
        }
        report
    }

    #[test]
    fn svg_has_a_row_of_panels_per_kernel_and_names_every_scheduler() {
        let svg = render_svg(&sweep_report()).unwrap();
        assert!(svg.contains(&format!("height=\"{}\"", 2 * ROW_HEIGHT)));
        for text in [
            "\nreduce\n",
            "\nscan\n",
            "time per run",
            "speed-up over seq",
            "time relative to seq, per thread count",
            "tree ×2",
            "ideal",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
    }

    #[test]
    fn every_axis_is_labelled_with_ticks_even_on_a_narrow_range() {
        // All times within 10 % of each other: a plain log axis would print no tick at all.
        let svg = render_svg(&sweep_report()).unwrap();
        for axis in [
            "scheduler × threads",
            "time per run (log scale)",
            "\nthreads\n",
            "speed-up (median seq / median)",
            "median time / seq median (log; &lt; 1 = faster)",
        ] {
            assert!(svg.contains(axis), "axis title {axis} missing");
        }
        assert!(
            svg.matches(" ms\n").count() >= 4,
            "time ticks in ms on both box panels"
        );
    }

    #[test]
    fn a_scheduler_has_one_colour_in_every_panel() {
        let svg = render_svg(&sweep_report()).unwrap();
        let tree = scheduler_colour("tree");
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", tree.0, tree.1, tree.2);
        // Its boxes (two kernels), its bars (two kernels) and its legend swatches.
        assert!(svg.matches(&fill).count() >= 4, "{fill}");
        assert_ne!(scheduler_colour("seq"), tree);
    }

    #[test]
    fn weak_scaling_kernels_say_so_in_their_heading() {
        let mut report = sweep_report();
        report
            .metadata
            .settings
            .insert("scan.weak_scaling".into(), "true".into());
        let svg = render_svg(&report).unwrap();
        assert!(svg.contains("scan — weak scaling: problem grows with threads"));
        assert!(!svg.contains("reduce — weak scaling"));
    }

    #[test]
    fn png_is_a_real_image() {
        let path = std::env::temp_dir().join(format!("parbench-plot-{}.png", std::process::id()));
        render_png(&sweep_report(), &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // Width and height from the IHDR chunk.
        let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!((width, height), (WIDTH, 2 * ROW_HEIGHT));
    }

    #[test]
    fn failed_cells_are_skipped_but_an_empty_report_is_an_error() {
        let mut report = sweep_report();
        report
            .cells
            .push(Cell::failed(&[("kernel", "qap")], "bad input".into()));
        assert!(render_svg(&report).is_ok());
        report.cells.retain(|c| c.summary.is_none());
        assert!(matches!(render_svg(&report), Err(PlotError::NothingToPlot)));
    }

    #[test]
    fn cells_without_sweep_labels_are_rejected() {
        let mut report = Report::new("latency", &["kernel"]);
        report
            .cells
            .push(Cell::measured(&[("kernel", "x")], vec![1.0]));
        assert!(matches!(
            render_svg(&report),
            Err(PlotError::MissingLabel("threads"))
        ));
        report.cells = vec![cell("x", "tree", "0", vec![1.0])];
        assert!(matches!(render_svg(&report), Err(PlotError::BadThreads(_))));
    }
}
