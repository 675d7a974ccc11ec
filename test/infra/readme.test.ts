import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { FUNCTIONS, type FunctionName } from '../../infra/functions';
import { SWEEPER_PARTS } from '../../infra/tool-runner';
import { synthDemo } from '../support/synth';

/** docs/deploy.md up to its targets, where it says what the construct and the demo stack create (the README points there). */
const deployDoc = readFileSync('docs/deploy.md', 'utf8');
const deploying = deployDoc.slice(0, deployDoc.indexOf('### Targets for the e2e suite'));

/** The groups of the first match of `pattern` in the section, or a failure naming the claim. */
function claims(pattern: RegExp, what: string): string[] {
  const match = pattern.exec(deploying);
  if (!match) throw new Error(`docs/deploy.md no longer says ${what} (${pattern})`);
  return match.slice(1);
}
const claim = (pattern: RegExp, what: string) => claims(pattern, what)[0];
const names = (list: string) => list.split(/,\s*|\s+and\s+/).map((n) => n.trim());
const NUMBERS: Record<string, number> = { six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12 };

type Resource = { Type: string; Properties: Record<string, any> };

describe("the README's claims about the deployed stack hold in the synthesized template", () => {
  let resources: Resource[];
  let functions: Record<FunctionName, Resource>;
  let demo: ReturnType<typeof synthDemo>;
  beforeAll(() => {
    demo = synthDemo();
    const json = demo.template.toJSON();
    resources = Object.values(json.Resources) as Resource[];
    const byId = json.Resources as Record<string, Resource>;
    functions = Object.fromEntries(
      (Object.keys(FUNCTIONS) as FunctionName[]).map((name) => [
        name,
        byId[demo.stack.getLogicalId(demo.stack.runner.functions[name]!.node.defaultChild as any)],
      ]),
    ) as Record<FunctionName, Resource>;
  }, 120_000);
  const ofType = (type: string) => resources.filter((r) => r.Type === type);

  it('gives the tools module and tools.environment to exactly the functions it names, and to no other', () => {
    const withTools = names(claim(/bundles it[^*]*into \*\*([^*]+)\*\* alone/, 'which function gets the tools'));
    const inProcess = names(claim(/run tools instead \(\*\*([^*]+)\*\*/, 'which functions get them without isolation'));
    const without = names(claim(/The others \(([^)]+)\)\s+neither load/, 'which functions do not'));
    expect([...withTools, ...inProcess, ...without].sort()).toEqual(Object.keys(FUNCTIONS).sort());
    for (const [name, fn] of Object.entries(functions) as [FunctionName, Resource][]) {
      const env = fn.Properties.Environment.Variables as Record<string, unknown>;
      // The demo's tools.environment is { SANDBOX_URL }; the template is the default toolIsolation ("function").
      expect('SANDBOX_URL' in env, `${name} gets tools.environment`).toBe(withTools.includes(name));
      const loads = withTools.includes(name) || inProcess.includes(name);
      expect(FUNCTIONS[name].tools, `${name}: tools in infra/functions.ts`).toBe(loads);
      const source = readFileSync(`functions/handlers/${FUNCTIONS[name].entry}.ts`, 'utf8');
      expect(source.includes("from 'toolrunner-user-tools'"), `${name} imports the tools module`).toBe(loads);
    }
  });

  it('runs every function on the runtime and architecture it names', () => {
    const [runtime, architecture] = claims(/Every function runs on Node\.js \d+ \(`(nodejs\d+\.x)`\) on (\w+)\./, 'the runtime');
    for (const fn of Object.values(functions)) {
      expect(fn.Properties.Runtime).toBe(runtime);
      expect(fn.Properties.Architectures).toEqual([architecture]);
    }
  });

  it('routes exactly the paths it lists to the API Lambda, on a $default stage with the throttling it names', () => {
    const paragraph = claim(/(Its routes, all to the API[\s\S]*?the API checks that signature\)\.)/, 'the routes');
    const listed = [...paragraph.matchAll(/`((?:ANY|POST) \/[^`]+)`/g)].map((m) => m[1]);
    expect(listed.length).toBeGreaterThanOrEqual(4);
    const routes = ofType('AWS::ApiGatewayV2::Route');
    expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual(listed.sort());
    const [integration] = ofType('AWS::ApiGatewayV2::Integration');
    expect(integration.Properties.PayloadFormatVersion).toBe('2.0');
    expect(JSON.stringify(integration.Properties.IntegrationUri)).toContain(
      demo.stack.getLogicalId(demo.stack.runner.functions.Api.node.defaultChild as any),
    );
    const [rate, burst] = claims(/`throttling`\s*\|\s*`\{ rateLimit: (\d+), burstLimit: (\d+) \}`/, 'the throttling default').map(Number);
    const [stage] = ofType('AWS::ApiGatewayV2::Stage');
    expect(stage.Properties.StageName).toBe('$default');
    expect(stage.Properties.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: rate, ThrottlingBurstLimit: burst });
    expect(ofType('AWS::ApiGateway::RestApi')).toEqual([]);
  });

  it('has the alarms of its table, one dashboard, and the counts, schedule and outputs it names', () => {
    // docs/operate.md lists each alarm (its tier, math and reason); deploy.md points there.
    expect(deploying).toContain('the alarms `docs/operate.md` lists');
    const operate = readFileSync('docs/operate.md', 'utf8');
    const table = operate.slice(operate.search(/^\| key +\| tier +\|/m), operate.indexOf('**In template mode**'));
    const keys = [...table.matchAll(/^\| `(\w+)`(?:, `(\w+)`)?/gm)].flatMap((m) => m.slice(1).filter(Boolean));
    expect(keys.length).toBeGreaterThanOrEqual(8);
    expect(Object.keys(demo.stack.runner.alarms).sort()).toEqual([...keys].sort());
    expect(ofType('AWS::CloudWatch::Alarm')).toHaveLength(keys.length);
    expect(ofType('AWS::CloudWatch::Dashboard')).toHaveLength(1);

    expect(ofType('AWS::DynamoDB::Table')).toHaveLength(NUMBERS[claim(/creates (\w+) DynamoDB tables/, 'the number of tables')]);
    for (const table of ofType('AWS::DynamoDB::Table')) expect(table.Properties.TimeToLiveSpecification?.Enabled).toBe(true);
    expect(ofType('AWS::Lambda::Function')).toHaveLength(NUMBERS[claim(/, (\w+) Lambdas \(/, 'the number of Lambdas')]);
    expect(deploying).toMatch(/runs the sweeper every\s+minute/);
    expect(ofType('AWS::Scheduler::Schedule').map((s) => s.Properties.ScheduleExpression)).toEqual(
      Array(SWEEPER_PARTS).fill('rate(1 minute)'),
    );

    const outputs = [...claim(/Outputs: ((?:`\w+`,?\s*(?:and\s+)?)+)/, 'the outputs').matchAll(/`(\w+)`/g)].map((m) => m[1]);
    expect(Object.keys(demo.template.toJSON().Outputs).sort()).toEqual(outputs.sort());
  });

  it('lists public members the construct has', () => {
    const members = [...claim(/Public members: ((?:`\w+`[^,.]*,?\s*(?:and\s+)?)+)\./, 'the public members').matchAll(/`(\w+)`/g)]
      .map((m) => m[1])
      .filter((m) => m !== 'HttpApi');
    expect(members).toEqual(
      expect.arrayContaining(['api', 'apiUrl', 'stateMachine', 'tables', 'approvalTopic', 'configSecret', 'alarms', 'dashboard']),
    );
    for (const member of members) expect(demo.stack.runner, member).toHaveProperty(member);
  });
});
