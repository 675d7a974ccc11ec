type Simulator = typeof import('@cloud-copilot/iam-simulate');

/**
 * The package does not install `@cloud-copilot/iam-simulate` for you: it is AGPL-3.0, and installing it is the
 * user's choice (`toolrunner init --cdk` adds it to the scaffold's devDependencies). Template mode loads it
 * before it starts and, when it is missing, names the one command that installs it.
 */
export const IAM_SIMULATE_MISSING =
  'template mode checks every AWS call against its IAM role with @cloud-copilot/iam-simulate (AGPL-3.0), which is not installed here; install it with: npm install -D @cloud-copilot/iam-simulate';

let simulator: Promise<Simulator> | undefined;

export function loadIamSimulator(): Promise<Simulator> {
  simulator ??= import('@cloud-copilot/iam-simulate').catch((error: unknown) => {
    simulator = undefined;
    throw new Error(IAM_SIMULATE_MISSING, { cause: error });
  });
  return simulator;
}
import type { PolicyDocument, RoleModel } from './stack-model';

/** Who makes a call: a role (a function's execution role, a state machine's, a schedule's) in one session. */
export interface Caller {
  role: RoleModel;
  /** The session name: the function's name for a Lambda, as AWS names its sessions. */
  session: string;
}

export type Decision = { allowed: true } | { allowed: false; message: string };

/** `arn:aws:sts::<account>:assumed-role/<role>/<session>`: the principal AWS names in an AccessDenied message. */
export function sessionArn(caller: Caller, account: string): string {
  return `arn:aws:sts::${account}:assumed-role/${caller.role.name}/${caller.session}`;
}

/**
 * IAM as AWS evaluates a call within one account, by `@cloud-copilot/iam-simulate`: the caller's role
 * policies from the template (identity-based) and the resource's policy (resource-based, e.g. an SNS topic
 * policy). Requests are made over TLS on AWS, so `aws:SecureTransport` is true. Decisions are cached: the
 * policies are the template's and do not change while the stack runs.
 */
export class IamCheck {
  private readonly decisions = new Map<string, Promise<Decision>>();

  constructor(
    private readonly account: string,
    private readonly region: string,
    private readonly resourcePolicies: Map<string, PolicyDocument>,
  ) {}

  authorize(caller: Caller, action: string, resource: string): Promise<Decision> {
    const key = `${caller.role.arn}\n${action}\n${resource}`;
    let decision = this.decisions.get(key);
    if (!decision) {
      decision = this.evaluate(caller, action, resource);
      this.decisions.set(key, decision);
    }
    return decision;
  }

  /**
   * A call an AWS service makes as its service principal (`cloudwatch.amazonaws.com` publishing an alarm):
   * only the resource's policy can allow it (`policy`, else the one the template gives the resource), with the
   * request's context (`aws:SourceAccount`, `aws:SourceArn`).
   */
  async authorizeService(
    service: string,
    action: string,
    resource: string,
    context: Record<string, string>,
    policy = this.resourcePolicies.get(resource),
  ): Promise<Decision> {
    const { runSimulation } = await loadIamSimulator();
    const result = await runSimulation(
      {
        request: {
          principal: service,
          action,
          resource: { resource, accountId: this.account },
          contextVariables: { 'aws:SecureTransport': 'true', 'aws:RequestedRegion': this.region, ...context },
        },
        identityPolicies: [],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        resourcePolicy: policy,
      },
      {},
    );
    if (result.resultType === 'error')
      throw new Error(`IAM simulation of ${action} on ${resource} failed: ${JSON.stringify(result.errors).slice(0, 500)}`);
    if (result.overallResult === 'Allowed') return { allowed: true };
    return {
      allowed: false,
      message: `${service} is not authorized to perform: ${action} on resource: ${resource} because ${policy ? 'its resource-based policy does not allow it' : 'it has no resource-based policy'}`,
    };
  }

  private async evaluate(caller: Caller, action: string, resource: string): Promise<Decision> {
    const [service, name] = action.split(':');
    // Actions without resource-level permissions (states:SendTaskSuccess, xray:PutTraceSegments) are evaluated
    // against "*", as IAM does: a statement naming a specific resource does not grant them.
    const { isWildcardOnlyAction, runSimulation, getDenialReasons } = await loadIamSimulator();
    const target = (await isWildcardOnlyAction(service, name)) ? '*' : resource;
    const principal = sessionArn(caller, this.account);
    const result = await runSimulation(
      {
        request: {
          principal,
          action,
          resource: { resource: target, accountId: this.account },
          contextVariables: {
            'aws:SecureTransport': 'true',
            'aws:PrincipalArn': caller.role.arn,
            'aws:PrincipalAccount': this.account,
            'aws:RequestedRegion': this.region,
          },
        },
        identityPolicies: caller.role.policies.map((p) => ({ name: p.name, policy: p.document })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        resourcePolicy: this.resourcePolicies.get(resource),
      },
      {},
    );
    if (result.resultType === 'error')
      throw new Error(`IAM simulation of ${action} on ${target} failed: ${JSON.stringify(result.errors).slice(0, 500)}`);
    if (result.overallResult === 'Allowed') return { allowed: true };
    const start = `User: ${principal} is not authorized to perform: ${action} on resource: ${target}`;
    if (result.overallResult === 'ExplicitlyDenied') {
      const analysis = result.resultType === 'single' ? result.result.analysis : undefined;
      const where = analysis ? getDenialReasons(analysis).find((d) => d.policyType)?.policyType : undefined;
      return {
        allowed: false,
        message: `${start} with an explicit deny in ${where === 'resource' ? 'a resource-based' : 'an identity-based'} policy`,
      };
    }
    return { allowed: false, message: `${start} because no identity-based policy allows the ${action} action` };
  }
}
