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
        <svg role="img" aria-label={`${title}: ${bars.map((b) => `${b.label} ${b.value}`).join(', ')}`} viewBox={`0 0 600 ${height}`} width="100%" height={height}>
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
