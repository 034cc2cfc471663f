// A horizontal bar chart in SVG: enough for the analytics dashboards without a charting library.
export function BarChart({ title, bars }: { title: string; bars: { label: string; value: number }[] }) {
  const max = Math.max(1, ...bars.map((b) => b.value));
  const row = 26;
  const height = Math.max(1, bars.length) * row;
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {bars.length === 0 ? (
        <p class="muted">No data in this period.</p>
      ) : (
        <svg
          role="img"
          aria-label={`${title}: ${bars.map((b) => `${b.label} ${b.value}`).join(', ')}`}
          viewBox={`0 0 600 ${height}`}
          width="100%"
          height={height}
        >
          {bars.map((b, i) => (
            <g key={b.label} transform={`translate(0 ${i * row})`}>
              <text x="0" y="17" class="chart-label">
                {b.label.length > 22 ? `${b.label.slice(0, 21)}…` : b.label}
              </text>
              <rect x="170" y="4" height="18" width={Math.max(1, (b.value / max) * 360)} class="chart-bar" />
              <text x={176 + (b.value / max) * 360} y="17" class="chart-value">
                {b.value.toLocaleString()}
              </text>
            </g>
          ))}
        </svg>
      )}
    </figure>
  );
}

/** A column per day (every day of the period, zero-filled), with the period's total in the caption. */
export function DailyChart({
  title,
  days,
  unit,
}: {
  title: string;
  days: { date: string; value: number }[];
  unit: string;
}) {
  const max = Math.max(0, ...days.map((d) => d.value));
  const total = Math.round(days.reduce((n, d) => n + d.value, 0) * 1e6) / 1e6;
  const width = 600;
  const height = 90;
  const step = width / Math.max(1, days.length);
  return (
    <figure class="chart daily">
      <figcaption>
        {title}: {total.toLocaleString(undefined, { maximumFractionDigits: 6 })} {unit}
      </figcaption>
      <svg
        role="img"
        aria-label={`${title} per day: ${days.map((d) => `${d.date} ${d.value}`).join(', ')}`}
        viewBox={`0 0 ${width} ${height + 16}`}
        width="100%"
      >
        {days.map((d, i) => {
          const h = max === 0 ? 0 : Math.max(d.value > 0 ? 1 : 0, (d.value / max) * height);
          return (
            <rect
              key={d.date}
              x={i * step + 1}
              y={height - h}
              width={Math.max(1, step - 2)}
              height={h}
              class="chart-bar"
            >
              <title>{`${d.date}: ${d.value.toLocaleString(undefined, { maximumFractionDigits: 6 })} ${unit}`}</title>
            </rect>
          );
        })}
        <text x="0" y={height + 13} class="chart-label">
          {days[0]?.date}
        </text>
        <text x={width} y={height + 13} text-anchor="end" class="chart-label">
          {days.at(-1)?.date}
        </text>
      </svg>
    </figure>
  );
}
