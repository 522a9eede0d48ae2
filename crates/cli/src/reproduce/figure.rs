//! The figures of reproduction reports, drawn as the studies drew theirs: box plots whose whiskers
//! reach p5 and p95 with the mean and its 95 % confidence interval as an error bar beside each box
//! (the INNCABS study), and curves of one quantity against another (scaling, p95 vs load).

use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use crate::plot::{PlotError, draw_box, draw_error};
use crate::stats::Summary;

/// Width and height of a report figure in pixels.
const SIZE: (u32, u32) = (1100, 520);

/// One box of a box plot.
#[derive(Debug, Clone)]
pub struct BoxItem {
    /// Label under the box.
    pub label: String,
    /// Its statistics (p5, p25, median, p75, p95, mean, CI95).
    pub summary: Summary,
}

/// Box plots with whiskers at p5/p95 and the mean with its CI95 error bar (red), one box per item,
/// on a logarithmic axis when the values span more than a factor of 20.
///
/// ```
/// use parbench_cli::reproduce::figure::{box_plot_svg, BoxItem};
/// use parbench_cli::stats::Summary;
/// let summary = Summary::from_samples(&[1.0, 2.0, 3.0]).unwrap();
/// let svg = box_plot_svg("demo", "seconds", &[BoxItem { label: "a".into(), summary }])?;
/// assert!(svg.contains("demo"));
/// # Ok::<(), parbench_cli::plot::PlotError>(())
/// ```
///
/// # Errors
/// [`PlotError::NothingToPlot`] without items, [`PlotError::Draw`] when drawing fails.
pub fn box_plot_svg(title: &str, y_desc: &str, items: &[BoxItem]) -> Result<String, PlotError> {
    if items.is_empty() {
        return Err(PlotError::NothingToPlot);
    }
    let low = items
        .iter()
        .map(|i| {
            i.summary
                .min
                .min(i.summary.ci95_low.unwrap_or(f64::INFINITY))
        })
        .fold(f64::INFINITY, f64::min);
    let high = items
        .iter()
        .map(|i| i.summary.max.max(i.summary.ci95_high.unwrap_or(0.0)))
        .fold(f64::NEG_INFINITY, f64::max);
    let labels: Vec<String> = items.iter().map(|i| i.label.clone()).collect();
    let label_at = move |x: &f64| {
        let index = x.round();
        if (x - index).abs() > 0.01 || index < 0.0 {
            return String::new();
        }
        labels.get(index as usize).cloned().unwrap_or_default()
    };
    let x_range = -0.5..items.len() as f64 - 0.5;
    let mut svg = String::new();
    {
        crate::plot::ensure_font();
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(140)
            .y_label_area_size(90);
        let colour = |index: usize| Palette99::pick(index).to_rgba();
        if low > 0.0 && high / low > 20.0 {
            let range = (low * 0.8)..(high * 1.25);
            let mut chart = builder
                .build_cartesian_2d(x_range, range.log_scale())
                .map_err(draw_error)?;
            configure(&mut chart, items.len(), &label_at, y_desc)?;
            for (index, item) in items.iter().enumerate() {
                draw_box(&mut chart, index as f64, &item.summary, colour(index), true)?;
            }
        } else {
            let pad = ((high - low) * 0.1).max(high.abs() * 0.01).max(1e-12);
            let bottom = if low >= 0.0 {
                (low - pad).max(0.0)
            } else {
                low - pad
            };
            let mut chart = builder
                .build_cartesian_2d(x_range, bottom..high + pad)
                .map_err(draw_error)?;
            configure(&mut chart, items.len(), &label_at, y_desc)?;
            for (index, item) in items.iter().enumerate() {
                draw_box(&mut chart, index as f64, &item.summary, colour(index), true)?;
            }
        }
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

fn configure<Y>(
    chart: &mut ChartContext<
        '_,
        SVGBackend<'_>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    count: usize,
    label_at: &dyn Fn(&f64) -> String,
    y_desc: &str,
) -> Result<(), PlotError>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(count.max(1))
        .x_label_formatter(label_at)
        .x_label_style(
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .y_desc(y_desc)
        .y_label_formatter(&|y| format!("{y:.3e}"))
        .draw()
        .map_err(draw_error)
}

/// A named curve.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points `(x, y)`, drawn in x order.
    pub points: Vec<(f64, f64)>,
}

/// Curves of `y` against `x`, one colour per series, with a legend.
///
/// ```
/// use parbench_cli::reproduce::figure::{line_chart_svg, Series};
/// let s = Series { name: "tree".into(), points: vec![(1.0, 1.0), (2.0, 1.9)] };
/// assert!(line_chart_svg("speed-up", "threads", "x", &[s])?.contains("tree"));
/// # Ok::<(), parbench_cli::plot::PlotError>(())
/// ```
///
/// # Errors
/// [`PlotError::NothingToPlot`] without any point, [`PlotError::Draw`] when drawing fails.
pub fn line_chart_svg(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
) -> Result<String, PlotError> {
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    if all.is_empty() {
        return Err(PlotError::NothingToPlot);
    }
    let (x_low, x_high) = bounds(all.iter().map(|p| p.0));
    let (y_low, y_high) = bounds(all.iter().map(|p| p.1));
    let y_low = if y_low >= 0.0 { 0.0 } else { y_low * 1.1 };
    let mut svg = String::new();
    {
        crate::plot::ensure_font();
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let x_pad = ((x_high - x_low) * 0.05).max(0.5);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(
                (x_low - x_pad)..(x_high + x_pad),
                y_low..(y_high * 1.15).max(y_low + 1e-12),
            )
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .y_label_formatter(&|y| format!("{y:.3}"))
            .draw()
            .map_err(draw_error)?;
        for (index, s) in series.iter().enumerate() {
            let mut points = s.points.clone();
            points.retain(|(x, y)| x.is_finite() && y.is_finite());
            if points.is_empty() {
                continue;
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let colour = Palette99::pick(index).to_rgba();
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(draw_error)?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, colour.filled())),
                )
                .map_err(draw_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_plots_draw_whiskers_and_a_mean_error_bar_per_item() {
        let items: Vec<BoxItem> = [1.0, 100.0]
            .iter()
            .enumerate()
            .map(|(i, scale)| BoxItem {
                label: format!("item{i}"),
                summary: Summary::from_samples(&[scale * 1.0, scale * 2.0, scale * 3.0]).unwrap(),
            })
            .collect();
        let svg = box_plot_svg("t", "s", &items).unwrap();
        assert!(svg.contains("item0") && svg.contains("item1"));
        // One red mean dot per box (plotters writes the fill as #FF0000).
        assert_eq!(svg.matches("fill=\"#FF0000\"").count(), 2, "{svg}");
        assert!(matches!(
            box_plot_svg("t", "s", &[]),
            Err(PlotError::NothingToPlot)
        ));
    }

    #[test]
    fn line_charts_need_a_finite_point() {
        let empty = Series {
            name: "x".into(),
            points: vec![(f64::NAN, 1.0)],
        };
        assert!(matches!(
            line_chart_svg("t", "x", "y", &[empty]),
            Err(PlotError::NothingToPlot)
        ));
    }
}
