// The scaling view of a run with a planner or a scaling script: replica counts over time by
// pool (active, with starting and draining workers shaded above), GPU-hours, and the
// planner's decision log (its scaling events and the ticks that proposed a change).
//
// Everything comes from the report: `planner.lifecycle` gives each pool's workers by state
// after every operation; the pools start at the sizes of the effective configuration.

import type { EffectiveConfig, PlannerRecord } from '../engine/protocol';
import type { ChartSpec, Line } from './harness-chart';
import { fmt } from './summary';

export interface PoolSteps {
  pool: string;
  active: number[];
  starting: number[];
  draining: number[];
}

/** Replica counts at each time a pool changed (seconds), from the start to `endMs`. */
export function replicaSteps(record: PlannerRecord, config: EffectiveConfig, endMs: number): { t_s: number[]; pools: PoolSteps[] } {
  const name = (p: string) => (p === 'aggregated' ? 'agg' : p);
  type Counts = [number, number, number];
  const zero = (): Counts => [0, 0, 0];
  const state = new Map<string, Counts>();
  for (const p of config.pools) state.set(name(p.pool), [p.workers, 0, 0]);
  for (const op of record.lifecycle) if (!state.has(op.pool)) state.set(op.pool, zero());
  const pools = [...state.keys()];
  const t_s: number[] = [0];
  const rows: Counts[][] = [pools.map((p) => state.get(p) ?? zero())];
  for (const op of record.lifecycle) {
    const s = op.state_after;
    state.set(op.pool, [s.active.length, s.starting.length, s.draining.length]);
    const t = op.at_ms / 1000;
    const snapshot = pools.map((p) => state.get(p) ?? zero());
    // Operations at one instant: the last state counts.
    if (t_s.at(-1) === t) rows[rows.length - 1] = snapshot;
    else {
      t_s.push(t);
      rows.push(snapshot);
    }
  }
  const end = Math.max(endMs / 1000, t_s.at(-1) ?? 0);
  if (end > (t_s.at(-1) ?? 0)) {
    t_s.push(end);
    rows.push(rows.at(-1) ?? []);
  }
  return {
    t_s,
    pools: pools.map((pool, i) => ({
      pool,
      active: rows.map((r) => r[i]?.[0] ?? 0),
      starting: rows.map((r) => r[i]?.[1] ?? 0),
      draining: rows.map((r) => r[i]?.[2] ?? 0),
    })),
  };
}

const POOL_COLORS: Record<string, string> = { agg: '#2563eb', prefill: '#7c3aed', decode: '#0891b2' };

/** The replica chart: per pool, active (filled), active + starting, and + draining, shaded between. */
export function replicaChart(steps: { t_s: number[]; pools: PoolSteps[] }): ChartSpec {
  const lines: Line[] = [];
  const ys: (number | null)[][] = [];
  const bands: ChartSpec['bands'] = [];
  for (const p of steps.pools) {
    const color = POOL_COLORS[p.pool] ?? '#2563eb';
    const base = ys.length + 1;
    ys.push(p.active);
    lines.push({ label: `${p.pool} active`, color, stepped: true, fill: `${color}22` });
    ys.push(p.active.map((a, i) => a + (p.starting[i] ?? 0)));
    lines.push({ label: `${p.pool} + starting`, color: '#059669', stepped: true, dash: [4, 3] });
    ys.push(p.active.map((a, i) => a + (p.starting[i] ?? 0) + (p.draining[i] ?? 0)));
    lines.push({ label: `${p.pool} + draining`, color: '#d97706', stepped: true, dash: [2, 3] });
    bands.push({ series: [base + 1, base], fill: 'rgba(5, 150, 105, 0.25)' }, { series: [base + 2, base + 1], fill: 'rgba(217, 119, 6, 0.25)' });
  }
  return { x: steps.t_s, ys, lines, bands, xLabel: 'time (s)', yLabel: 'workers', counts: true };
}

function cell(tag: 'td' | 'th', text: string, cls?: string): HTMLElement {
  const e = document.createElement(tag);
  e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function table(head: string[], rows: string[][], id: string): HTMLTableElement {
  const t = document.createElement('table');
  t.id = id;
  t.className = 'log';
  const tr = document.createElement('tr');
  for (const h of head) tr.append(cell('th', h));
  t.createTHead().append(tr);
  const body = t.createTBody();
  for (const r of rows) {
    const row = document.createElement('tr');
    r.forEach((v, i) => {
      row.append(cell('td', v, i === 0 ? 'num' : undefined));
    });
    body.append(row);
  }
  return t;
}

const sizes = (t: [number[], number[], number[]]) =>
  `${t[0].length} active${t[1].length ? `, ${t[1].length} starting` : ''}${t[2].length ? `, ${t[2].length} draining` : ''}`;

/** The decision log: scaling events, then the ticks that proposed a change or gave a reason. */
export function decisionLog(record: PlannerRecord, disaggregated: boolean): HTMLElement {
  const box = document.createElement('div');
  box.className = 'decision-log';
  const events = record.scaling_events.map((e) => [fmt(e.at_s), e.component, `${e.from_count} → ${e.to_count}`, e.reason]);
  const h = document.createElement('h3');
  h.textContent = `Scaling events (${events.length})`;
  box.append(h);
  if (events.length) box.append(table(['at (s)', 'pool', 'workers', 'reason'], events, 'scaling-events'));
  else box.append(Object.assign(document.createElement('p'), { className: 'note', textContent: 'No scaling event: the pools kept their size.' }));
  const ticks = record.ticks.filter((t) => t.scale_to !== null || t.load_decision_reason !== null);
  const rows = ticks.map((t) => {
    const proposal = t.scale_to
      ? disaggregated
        ? `prefill ${t.scale_to.num_prefill ?? '—'}, decode ${t.scale_to.num_decode ?? '—'}`
        : String(t.scale_to.num_decode ?? '—')
      : 'no change';
    const d = t.decision;
    const applied =
      d.target_prefill === null && d.target_decode === null
        ? '—'
        : disaggregated
          ? `prefill ${d.target_prefill}, decode ${d.target_decode}`
          : String(d.target_decode);
    const pools = disaggregated ? `prefill ${sizes(t.prefill)}; decode ${sizes(t.decode)}` : sizes(t.decode);
    return [fmt(t.at_ms / 1000), pools, t.load_decision_reason ?? '', proposal, applied];
  });
  const details = document.createElement('details');
  details.id = 'planner-ticks';
  const summary = document.createElement('summary');
  summary.textContent = `Planner ticks: ${record.total_ticks} in all, ${ticks.length} with a load decision`;
  details.append(summary);
  if (rows.length) details.append(table(['at (s)', 'workers', 'decision', 'proposed', 'applied'], rows, 'planner-tick-log'));
  if (record.total_ticks > 0) box.append(details);
  return box;
}
