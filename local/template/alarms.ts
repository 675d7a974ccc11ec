import { z } from 'zod';
import type { StackAssembly } from './assembly';
import { Intrinsics, type LocalPlacement, LOCAL_ENVIRONMENT } from './stack-model';

/** One query of an alarm's `Metrics`: a metric's statistic, or math over other queries' ids. */
export interface MetricQuery {
  id: string;
  returnData: boolean;
  expression?: string;
  stat?: { namespace: string; name: string; dimensions: Record<string, string>; statistic: string; periodSeconds: number };
}

export interface AlarmModel {
  logicalId: string;
  name: string;
  arn: string;
  description?: string;
  periodSeconds: number;
  evaluationPeriods: number;
  datapointsToAlarm: number;
  threshold: number;
  comparison: string;
  treatMissingData: 'breaching' | 'notBreaching' | 'ignore' | 'missing';
  actionsEnabled: boolean;
  alarmActions: string[];
  okActions: string[];
  queries: MetricQuery[];
}

export interface CompositeModel {
  logicalId: string;
  name: string;
  arn: string;
  description?: string;
  rule: string;
  actionsEnabled: boolean;
  alarmActions: string[];
  okActions: string[];
}

/** A log metric filter the local stack can honour: `{ $.field = "value" }` on a log group. */
export interface LogFilterModel {
  logGroupName: string;
  field: string;
  value: string;
  namespace: string;
  name: string;
  metricValue: number;
}

export type AlarmState = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';

const Dimensions = z.array(z.object({ Name: z.string(), Value: z.coerce.string() }));
/** The AWS::CloudWatch::Alarm properties the local evaluation honours, intrinsics resolved. */
const AlarmProperties = z.object({
  AlarmDescription: z.string().optional(),
  ActionsEnabled: z.boolean().optional(),
  AlarmActions: z.array(z.string()).optional(),
  OKActions: z.array(z.string()).optional(),
  ComparisonOperator: z.enum(['GreaterThanOrEqualToThreshold', 'GreaterThanThreshold', 'LessThanThreshold', 'LessThanOrEqualToThreshold']),
  EvaluationPeriods: z.coerce.number().int().positive(),
  DatapointsToAlarm: z.coerce.number().int().positive().optional(),
  Threshold: z.coerce.number(),
  TreatMissingData: z.enum(['breaching', 'notBreaching', 'ignore', 'missing']).default('missing'),
  Namespace: z.string().optional(),
  MetricName: z.string().optional(),
  Dimensions: Dimensions.optional(),
  Statistic: z.string().optional(),
  ExtendedStatistic: z.string().optional(),
  Period: z.coerce.number().optional(),
  Metrics: z
    .array(
      z.object({
        Id: z.string(),
        ReturnData: z.boolean().optional(),
        Expression: z.string().optional(),
        MetricStat: z
          .object({
            Metric: z.object({ Namespace: z.string(), MetricName: z.string(), Dimensions: Dimensions.optional() }),
            Stat: z.string(),
            Period: z.coerce.number(),
          })
          .optional(),
      }),
    )
    .optional(),
});
const FilterProperties = z.object({
  FilterPattern: z.string(),
  LogGroupName: z.string(),
  MetricTransformations: z.array(z.object({ MetricNamespace: z.string(), MetricName: z.string(), MetricValue: z.coerce.string() })),
});

/** The alarms, composite alarms and log metric filters of the template, every intrinsic resolved. */
export function bindAlarms(
  assembly: StackAssembly,
  placement: LocalPlacement,
): { alarms: AlarmModel[]; composites: CompositeModel[]; filters: LogFilterModel[] } {
  const region = assembly.region ?? LOCAL_ENVIRONMENT.region;
  const account = assembly.account ?? LOCAL_ENVIRONMENT.account;
  const resources = assembly.template.Resources;
  const cfn = new Intrinsics(resources, { stackName: assembly.stackName, region, account, placement });
  const of = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const list = (value: unknown, where: string) => ((cfn.resolve(value ?? [], where) as unknown[]) ?? []).map(String);
  const alarms = of('AWS::CloudWatch::Alarm').map(([id, r]): AlarmModel => {
    const p = AlarmProperties.parse(cfn.resolve(r.Properties ?? {}, id));
    const dimensions = (list: { Name: string; Value: string }[] = []) => Object.fromEntries(list.map((d) => [d.Name, d.Value]));
    const queries: MetricQuery[] = p.Metrics
      ? p.Metrics.map((q) => ({
          id: q.Id,
          returnData: q.ReturnData !== false,
          ...(q.Expression ? { expression: q.Expression } : {}),
          ...(q.MetricStat
            ? {
                stat: {
                  namespace: q.MetricStat.Metric.Namespace,
                  name: q.MetricStat.Metric.MetricName,
                  dimensions: dimensions(q.MetricStat.Metric.Dimensions),
                  statistic: q.MetricStat.Stat,
                  periodSeconds: q.MetricStat.Period,
                },
              }
            : {}),
        }))
      : [
          {
            id: 'm',
            returnData: true,
            stat: {
              namespace: p.Namespace ?? '',
              name: p.MetricName ?? '',
              dimensions: dimensions(p.Dimensions),
              statistic: p.ExtendedStatistic ?? p.Statistic ?? 'Average',
              periodSeconds: p.Period ?? 60,
            },
          },
        ];
    const periodSeconds = queries.find((q) => q.stat)?.stat?.periodSeconds ?? p.Period ?? 60;
    const evaluationPeriods = p.EvaluationPeriods;
    return {
      logicalId: id,
      name: cfn.string({ Ref: id }, id),
      arn: cfn.string({ 'Fn::GetAtt': [id, 'Arn'] }, id),
      description: p.AlarmDescription,
      periodSeconds,
      evaluationPeriods,
      datapointsToAlarm: p.DatapointsToAlarm ?? evaluationPeriods,
      threshold: p.Threshold,
      comparison: p.ComparisonOperator,
      treatMissingData: p.TreatMissingData,
      actionsEnabled: p.ActionsEnabled !== false,
      alarmActions: list(p.AlarmActions, `${id}.AlarmActions`),
      okActions: list(p.OKActions, `${id}.OKActions`),
      queries,
    };
  });
  const composites = of('AWS::CloudWatch::CompositeAlarm').map(([id, r]): CompositeModel => {
    const p = r.Properties ?? {};
    return {
      logicalId: id,
      name: cfn.string({ Ref: id }, id),
      arn: cfn.string({ 'Fn::GetAtt': [id, 'Arn'] }, id),
      description: p.AlarmDescription as string | undefined,
      rule: cfn.string(p.AlarmRule, `${id}.AlarmRule`),
      actionsEnabled: p.ActionsEnabled !== false,
      alarmActions: list(p.AlarmActions, `${id}.AlarmActions`),
      okActions: list(p.OKActions, `${id}.OKActions`),
    };
  });
  const filters = of('AWS::Logs::MetricFilter').flatMap(([id, r]): LogFilterModel[] => {
    const p = FilterProperties.parse(cfn.resolve(r.Properties ?? {}, id));
    const m = /^\{\s*\$\.([\w.]+)\s*=\s*"([^"]*)"\s*\}$/.exec(String(p.FilterPattern));
    const t = p.MetricTransformations?.[0];
    if (!m || !t) return [];
    return [
      {
        logGroupName: String(p.LogGroupName),
        field: m[1],
        value: m[2],
        namespace: t.MetricNamespace,
        name: t.MetricName,
        metricValue: Number(t.MetricValue),
      },
    ];
  });
  return { alarms, composites, filters };
}

/** A datapoint of one series. */
interface Point {
  at: number;
  value: number;
}

const seriesKey = (namespace: string, name: string, dimensions: Record<string, string>) =>
  `${namespace}\n${name}\n${JSON.stringify(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)))}`;

/**
 * CloudWatch's metrics as far as the local stack's alarms need them: datapoints by namespace, name and exact
 * dimensions, from EMF lines and Lambda's own per-function metrics, kept only as long as an alarm looks back.
 */
export class MetricStore {
  private readonly series = new Map<string, Point[]>();

  constructor(private readonly keepMs: number) {}

  put(namespace: string, name: string, dimensions: Record<string, string>, value: number, at = Date.now()): void {
    const key = seriesKey(namespace, name, dimensions);
    const points = this.series.get(key) ?? [];
    points.push({ at, value });
    this.series.set(key, points);
  }

  /**
   * One log line of a function: an embedded-metric-format document becomes a datapoint for each metric under
   * each of its dimension sets, as CloudWatch Logs extracts them.
   */
  putEmfLine(line: string): void {
    if (!line.includes('"_aws"')) return;
    let doc: {
      _aws?: { Timestamp?: number; CloudWatchMetrics?: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
    } & Record<string, unknown>;
    try {
      doc = JSON.parse(line.slice(line.indexOf('{')));
    } catch {
      return;
    }
    const at = Number(doc._aws?.Timestamp ?? Date.now());
    for (const directive of doc._aws?.CloudWatchMetrics ?? [])
      for (const set of directive.Dimensions)
        for (const metric of directive.Metrics) {
          const value = Number(doc[metric.Name]);
          if (!Number.isFinite(value)) continue;
          this.put(directive.Namespace, metric.Name, Object.fromEntries(set.map((k) => [k, String(doc[k])])), value, at);
        }
  }

  /** The statistic of the datapoints in [from, to); undefined when there are none. */
  statistic(
    namespace: string,
    name: string,
    dimensions: Record<string, string>,
    statistic: string,
    from: number,
    to: number,
  ): number | undefined {
    const values = (this.series.get(seriesKey(namespace, name, dimensions)) ?? [])
      .filter((p) => p.at >= from && p.at < to)
      .map((p) => p.value);
    if (!values.length) return undefined;
    switch (statistic) {
      case 'Sum':
        return values.reduce((a, b) => a + b, 0);
      case 'Maximum':
        return Math.max(...values);
      case 'Minimum':
        return Math.min(...values);
      case 'SampleCount':
        return values.length;
      case 'Average':
        return values.reduce((a, b) => a + b, 0) / values.length;
      default: {
        const p = /^p(\d+(?:\.\d+)?)$/.exec(statistic);
        if (!p) return undefined;
        const sorted = values.sort((a, b) => a - b);
        return sorted[Math.min(sorted.length - 1, Math.ceil((Number(p[1]) / 100) * sorted.length) - 1)];
      }
    }
  }

  prune(now = Date.now()): void {
    for (const [key, points] of this.series) {
      const kept = points.filter((p) => p.at >= now - this.keepMs);
      if (kept.length) this.series.set(key, kept);
      else this.series.delete(key);
    }
  }
}

type Value = number | undefined | Value[];

/**
 * CloudWatch metric math, the part the runner's alarms use: numbers, query ids, + - * /, comparisons,
 * `[a, b]` arrays, FILL, SUM, MAX, MIN, AVG and IF. A missing datapoint is `undefined` and propagates as
 * CloudWatch's does (FILL replaces it; SUM, MAX and MIN skip it).
 */
export function evaluateMath(expression: string, values: (id: string) => number | undefined): number | undefined {
  const tokens = expression.match(/\s*(>=|<=|==|!=|&&|\|\||[A-Za-z_][\w]*|\d+(?:\.\d+)?|[-+*/(),[\]<>])/g)?.map((t) => t.trim()) ?? [];
  if (tokens.join('') !== expression.replace(/\s+/g, '')) throw new Error(`metric math: cannot parse ${expression}`);
  let i = 0;
  const peek = () => tokens[i];
  const take = (want?: string) => {
    const t = tokens[i++];
    if (want && t !== want) throw new Error(`metric math: expected ${want} in ${expression}`);
    return t;
  };
  const scalar = (v: Value): number | undefined => (Array.isArray(v) ? undefined : v);
  const flat = (v: Value): (number | undefined)[] => (Array.isArray(v) ? v.flatMap(flat) : [v]);
  const binary = (a: Value, b: Value, f: (x: number, y: number) => number): number | undefined => {
    const x = scalar(a);
    const y = scalar(b);
    return x === undefined || y === undefined ? undefined : f(x, y);
  };
  const call = (name: string, args: Value[]): Value => {
    const present = (v: Value) => flat(v).filter((x): x is number => x !== undefined);
    switch (name.toUpperCase()) {
      case 'FILL': {
        const fill = scalar(args[1]);
        return Array.isArray(args[0]) ? args[0].map((x) => (x === undefined ? fill : x)) : (args[0] ?? fill);
      }
      case 'SUM': {
        const xs = present(args[0]);
        return xs.length ? xs.reduce((a, b) => a + b, 0) : undefined;
      }
      case 'MAX': {
        const xs = present(args[0]);
        return xs.length ? Math.max(...xs) : undefined;
      }
      case 'MIN': {
        const xs = present(args[0]);
        return xs.length ? Math.min(...xs) : undefined;
      }
      case 'AVG': {
        const xs = present(args[0]);
        return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : undefined;
      }
      case 'IF': {
        const c = scalar(args[0]);
        return c === undefined ? undefined : c !== 0 ? args[1] : args[2];
      }
      default:
        throw new Error(`metric math: ${name} is not evaluated by the local stack`);
    }
  };
  const primary = (): Value => {
    const t = take();
    if (t === '(') {
      const v = or();
      take(')');
      return v;
    }
    if (t === '[') {
      const items: Value[] = [];
      if (peek() !== ']')
        do items.push(or());
        while (peek() === ',' && take());
      take(']');
      return items;
    }
    if (t === '-') return binary(0, primary(), (x, y) => x - y);
    if (/^\d/.test(t)) return Number(t);
    if (peek() === '(') {
      take('(');
      const args: Value[] = [];
      if (peek() !== ')')
        do args.push(or());
        while (peek() === ',' && take());
      take(')');
      return call(t, args);
    }
    return values(t);
  };
  const product = (): Value => {
    let v = primary();
    while (peek() === '*' || peek() === '/') {
      const op = take();
      v = binary(v, primary(), op === '*' ? (x, y) => x * y : (x, y) => (y === 0 ? Number.NaN : x / y));
    }
    return v;
  };
  const sum = (): Value => {
    let v = product();
    while (peek() === '+' || peek() === '-') {
      const op = take();
      v = binary(v, product(), op === '+' ? (x, y) => x + y : (x, y) => x - y);
    }
    return v;
  };
  const compare = (): Value => {
    let v = sum();
    const ops: Record<string, (x: number, y: number) => boolean> = {
      '>=': (x, y) => x >= y,
      '<=': (x, y) => x <= y,
      '>': (x, y) => x > y,
      '<': (x, y) => x < y,
      '==': (x, y) => x === y,
      '!=': (x, y) => x !== y,
    };
    while (peek() in ops) {
      const op = ops[take()];
      v = binary(v, sum(), (x, y) => Number(op(x, y)));
    }
    return v;
  };
  const or = (): Value => {
    let v = compare();
    while (peek() === '&&' || peek() === '||') {
      const op = take();
      v = binary(v, compare(), op === '&&' ? (x, y) => Number(x !== 0 && y !== 0) : (x, y) => Number(x !== 0 || y !== 0));
    }
    return v;
  };
  const result = scalar(or());
  if (i !== tokens.length) throw new Error(`metric math: unexpected ${tokens[i]} in ${expression}`);
  return result === undefined || Number.isNaN(result) ? undefined : result;
}

/** A composite alarm's rule: ALARM("name or ARN"), OK(…), INSUFFICIENT_DATA(…), TRUE, FALSE, AND, OR, NOT, parentheses. */
export function evaluateRule(rule: string, stateOf: (nameOrArn: string) => AlarmState): boolean {
  const tokens = rule.match(/\s*(\(|\)|"[^"]*"|[A-Za-z_]+)/g)?.map((t) => t.trim()) ?? [];
  let i = 0;
  const atom = (): boolean => {
    const t = tokens[i++];
    if (t === '(') {
      const v = or();
      i++;
      return v;
    }
    if (t === 'NOT') return !atom();
    if (t === 'TRUE') return true;
    if (t === 'FALSE') return false;
    if (t === 'ALARM' || t === 'OK' || t === 'INSUFFICIENT_DATA') {
      i++; // (
      const target = tokens[i++].replace(/^"|"$/g, '');
      i++; // )
      return stateOf(target) === t;
    }
    throw new Error(`composite alarm rule: unexpected ${t} in ${rule}`);
  };
  const and = (): boolean => {
    let v = atom();
    while (tokens[i] === 'AND') {
      i++;
      v = atom() && v;
    }
    return v;
  };
  const or = (): boolean => {
    let v = and();
    while (tokens[i] === 'OR') {
      i++;
      v = and() || v;
    }
    return v;
  };
  return or();
}

/** A state change an alarm's actions are told of, as CloudWatch sends it to SNS. */
export interface AlarmChange {
  alarm: { name: string; arn: string; description?: string };
  from: AlarmState;
  to: AlarmState;
  reason: string;
  at: string;
  /** The actions of this change (the alarm's `AlarmActions` into ALARM, `OKActions` into OK), when actions are enabled. */
  actions: string[];
}

const COMPARE: Record<string, (v: number, t: number) => boolean> = {
  GreaterThanOrEqualToThreshold: (v, t) => v >= t,
  GreaterThanThreshold: (v, t) => v > t,
  LessThanThreshold: (v, t) => v < t,
  LessThanOrEqualToThreshold: (v, t) => v <= t,
};

/**
 * The template's alarms evaluated locally with their own Period, EvaluationPeriods, DatapointsToAlarm,
 * TreatMissingData and composite AlarmRule. `timeScale` shortens time for tests: a period of P seconds lasts
 * P / timeScale real seconds. Periods count from the stack's start: an alarm is INSUFFICIENT_DATA until one
 * has ended, as a new alarm is on AWS.
 */
export class AlarmEvaluator {
  readonly states = new Map<string, AlarmState>();
  private readonly started: number;

  constructor(
    readonly alarms: AlarmModel[],
    readonly composites: CompositeModel[],
    readonly metrics: MetricStore,
    private readonly timeScale: number,
    private readonly onChange: (change: AlarmChange) => void,
    now = Date.now(),
  ) {
    this.started = now;
    for (const a of [...alarms, ...composites]) this.states.set(a.name, 'INSUFFICIENT_DATA');
  }

  /** How long (real ms) an alarm looks back at most: what the metric store must keep. */
  static lookBackMs(alarms: AlarmModel[], timeScale: number): number {
    return Math.max(60_000, ...alarms.map((a) => (a.periodSeconds * (a.evaluationPeriods + 1) * 1000) / timeScale));
  }

  /** Evaluates every alarm at `now` (real ms), then the composites; tells `onChange` of each state change. */
  evaluate(now = Date.now()): void {
    for (const alarm of this.alarms) {
      const periodMs = (alarm.periodSeconds * 1000) / this.timeScale;
      const ended = Math.floor((now - this.started) / periodMs);
      if (ended < 1) continue;
      const count = Math.min(alarm.evaluationPeriods, ended);
      const datapoints: (number | undefined)[] = [];
      for (let k = ended - count; k < ended; k++) {
        const from = this.started + k * periodMs;
        datapoints.push(this.datapoint(alarm, from, from + periodMs));
      }
      const compare = COMPARE[alarm.comparison];
      const present = datapoints.filter((d): d is number => d !== undefined);
      let breaching = present.filter((d) => compare(d, alarm.threshold)).length;
      let next: AlarmState;
      if (alarm.treatMissingData === 'breaching') breaching += datapoints.length - present.length;
      if (breaching >= alarm.datapointsToAlarm) next = 'ALARM';
      else if (present.length || alarm.treatMissingData === 'notBreaching' || alarm.treatMissingData === 'breaching') next = 'OK';
      else next = alarm.treatMissingData === 'ignore' ? (this.states.get(alarm.name) as AlarmState) : 'INSUFFICIENT_DATA';
      const shown = datapoints.map((d) => (d === undefined ? 'missing' : String(Math.round(d * 1000) / 1000))).join(', ');
      this.move(
        alarm,
        next,
        `Threshold Crossed: ${breaching} out of the last ${alarm.evaluationPeriods} datapoints [${shown}] were ${alarm.comparison
          .replace(/Threshold$/, '')
          .replace(/([a-z])([A-Z])/g, '$1 $2')
          .toLowerCase()} the threshold (${alarm.threshold}) (minimum ${alarm.datapointsToAlarm} datapoints for OK -> ALARM transition).`,
        now,
        alarm.alarmActions,
        alarm.okActions,
        alarm.actionsEnabled,
      );
    }
    const byArn = new Map([...this.alarms, ...this.composites].map((a) => [a.arn, a.name]));
    for (const composite of this.composites) {
      const inAlarm = evaluateRule(composite.rule, (target) => this.states.get(byArn.get(target) ?? target) ?? 'INSUFFICIENT_DATA');
      const members = this.alarms.filter((a) => composite.rule.includes(a.arn) || composite.rule.includes(`"${a.name}"`));
      const firing = members.filter((a) => this.states.get(a.name) === 'ALARM').map((a) => a.name);
      this.move(
        composite,
        inAlarm ? 'ALARM' : 'OK',
        inAlarm ? `arn in ALARM: ${firing.join(', ')}` : 'no alarm of the rule is in ALARM',
        now,
        composite.alarmActions,
        composite.okActions,
        composite.actionsEnabled,
      );
    }
    this.metrics.prune(now);
  }

  private move(
    alarm: { name: string; arn: string; description?: string },
    to: AlarmState,
    reason: string,
    now: number,
    alarmActions: string[],
    okActions: string[],
    actionsEnabled: boolean,
  ): void {
    const from = this.states.get(alarm.name) ?? 'INSUFFICIENT_DATA';
    if (from === to) return;
    this.states.set(alarm.name, to);
    const actions = !actionsEnabled ? [] : to === 'ALARM' ? alarmActions : to === 'OK' ? okActions : [];
    this.onChange({ alarm, from, to, reason, at: new Date(now).toISOString(), actions });
  }

  /** The value of the alarm's returned query in one period. */
  private datapoint(alarm: AlarmModel, from: number, to: number): number | undefined {
    const cache = new Map<string, number | undefined>();
    const byId = new Map(alarm.queries.map((q) => [q.id, q]));
    const value = (id: string): number | undefined => {
      if (cache.has(id)) return cache.get(id);
      const q = byId.get(id);
      if (!q) throw new Error(`alarm ${alarm.name}: no query ${id}`);
      let v: number | undefined;
      if (q.stat) v = this.metrics.statistic(q.stat.namespace, q.stat.name, q.stat.dimensions, q.stat.statistic, from, to);
      // Metrics Insights queries read no datapoints here.
      else if (q.expression && !/^\s*SELECT\b/i.test(q.expression)) v = evaluateMath(q.expression, value);
      cache.set(id, v);
      return v;
    };
    const returned = alarm.queries.find((q) => q.returnData) ?? alarm.queries[0];
    return value(returned.id);
  }
}
