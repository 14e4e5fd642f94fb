// Exports that need no DOM (the worker builds them): per-request and time-series CSV.

import { entry, type RecordColumns, type TimeSeries } from './protocol';

const STATUS = ['pending', 'completed', 'rejected', 'unschedulable'];

function csvNum(x: number): string {
  return Number.isFinite(x) ? String(x) : '';
}

/** One row per request, in trace order. */
export function recordsCsv(c: RecordColumns): string {
  const lines = [
    'request,arrival_ms,input_length,output_tokens,first_token_ms,last_token_ms,end_ms,ttft_ms,e2e_ms,reused_input_tokens,readmissions,status,worker',
  ];
  for (const [i, arrival] of c.arrival_ms.entries()) {
    const first = entry(c.first_token_ms, i);
    const end = entry(c.end_ms, i);
    lines.push(
      [
        i,
        arrival,
        entry(c.input_length, i),
        entry(c.output_tokens, i),
        csvNum(first),
        csvNum(entry(c.last_token_ms, i)),
        csvNum(end),
        csvNum(first - arrival),
        csvNum(end - arrival),
        entry(c.reused_input_tokens, i),
        Math.max(0, entry(c.admissions, i) - 1),
        STATUS[entry(c.status, i)] ?? '',
        entry(c.worker, i),
      ].join(','),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Cluster columns, then each rank's columns, one row per window end. */
export function seriesCsv(s: Pick<TimeSeries, 't_ms' | 'cluster' | 'ranks'>): string {
  const cols: [string, Float64Array][] = [['t_ms', s.t_ms]];
  for (const [k, v] of Object.entries(s.cluster)) cols.push([k, v]);
  for (const r of s.ranks) for (const [k, v] of Object.entries(r.columns)) cols.push([`w${r.worker}_dp${r.dp_rank}_${k}`, v]);
  const lines = [cols.map(([k]) => k).join(',')];
  for (const i of s.t_ms.keys()) lines.push(cols.map(([, v]) => csvNum(entry(v, i))).join(','));
  return `${lines.join('\n')}\n`;
}
