//! SVG figures from a sweep report: per kernel, box plots of the run times of every
//! scheduler × threads cell, and speed-up over `seq` against the thread count, one line per
//! scheduler with the ideal (linear) speed-up dashed.
//!
//! The figure is drawn from the report's statistics, not recomputed: the box spans p25–p75, the
//! bar inside is the median, the whiskers reach p5 and p95 — the same numbers the tables print.
//! The time axis is logarithmic because schedulers differ by orders of magnitude (a thread per task
//! against work stealing). Only the SVG backend of plotters is used, with its built-in font metrics,
//! so no system font library is needed; the SVG viewer renders the text.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use thiserror::Error;

use crate::results::{Cell, Report};
use crate::stats::Summary;

/// Width of the whole figure in pixels.
const WIDTH: u32 = 1400;
/// Height of one kernel's row of panels in pixels.
const ROW_HEIGHT: u32 = 440;
/// Half the width of a box, in category units (a category is 1 wide).
const BOX_HALF_WIDTH: f64 = 0.3;

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
    let mut kernels: Vec<&str> = Vec::new();
    for point in &points {
        if !kernels.contains(&point.kernel) {
            kernels.push(point.kernel);
        }
    }
    let height = ROW_HEIGHT * kernels.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let rows = root.split_evenly((kernels.len(), 1));
        for (kernel, row) in kernels.iter().zip(&rows) {
            let cells: Vec<&Point> = points.iter().filter(|p| p.kernel == *kernel).collect();
            let (left, right) = row.split_horizontally(WIDTH * 3 / 5);
            draw_boxes(&left, kernel, &cells)?;
            draw_speedup(&right, kernel, &cells)?;
        }
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
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

/// Box plots of run times, one box per cell in measurement order, coloured by thread count.
fn draw_boxes(
    area: &DrawingArea<SVGBackend, Shift>,
    kernel: &str,
    cells: &[&Point],
) -> Result<(), PlotError> {
    let low = cells
        .iter()
        .map(|c| c.summary.min)
        .fold(f64::INFINITY, f64::min);
    let high = cells.iter().map(|c| c.summary.max).fold(0.0, f64::max);
    // A log axis needs a positive, non-empty range; pad by a factor so that extreme boxes stay
    // visible.
    let low = (low * 0.8).max(1e-12);
    let high = (high * 1.25).max(low * 2.0);
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
        .caption(format!("{kernel}: time per run"), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(110)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..cells.len() as f64 - 0.5, (low..high).log_scale())
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
        .y_desc("seconds (log)")
        .y_label_formatter(&|y| format!("{y:.1e}"))
        .draw()
        .map_err(draw_error)?;
    let thread_counts = distinct_threads(cells);
    for (index, cell) in cells.iter().enumerate() {
        let x = index as f64;
        let s = cell.summary;
        let colour = thread_colour(&thread_counts, cell.threads);
        draw_box(&mut chart, x, s, colour, false)?;
    }
    Ok(())
}

/// One box at `x`: p25–p75 filled in `colour`, the median as a bar, whiskers at p5 and p95; with
/// `mean_with_ci`, also the mean as a dot with its 95 % confidence interval as an error bar (the
/// INNCABS study's box plots). Shared by every figure that draws run-time distributions.
pub(crate) fn draw_box<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
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
fn draw_speedup(
    area: &DrawingArea<SVGBackend, Shift>,
    kernel: &str,
    cells: &[&Point],
) -> Result<(), PlotError> {
    let max_threads = cells.iter().map(|c| c.threads).max().unwrap_or(1);
    let top = cells
        .iter()
        .filter_map(|c| c.speedup)
        .fold(max_threads as f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{kernel}: speed-up over seq"), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
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
    for (index, scheduler) in schedulers.iter().enumerate() {
        let mut line: Vec<(f64, f64)> = cells
            .iter()
            .filter(|c| c.scheduler == *scheduler)
            .filter_map(|c| c.speedup.map(|s| (c.threads as f64, s)))
            .collect();
        if line.is_empty() {
            continue;
        }
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        let colour = Palette99::pick(index).to_rgba();
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

fn distinct_threads(cells: &[&Point]) -> Vec<usize> {
    let mut threads: Vec<usize> = cells.iter().map(|c| c.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    threads
}

fn thread_colour(thread_counts: &[usize], threads: usize) -> RGBAColor {
    let index = thread_counts
        .iter()
        .position(|&t| t == threads)
        .unwrap_or(0);
    Palette99::pick(index).to_rgba()
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
        assert!(svg.contains("reduce: time per run"));
        assert!(svg.contains("scan: speed-up over seq"));
        assert!(svg.contains("tree ×2"));
        assert!(svg.contains("ideal"), "legend names the ideal line");
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
