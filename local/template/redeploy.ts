import { randomInt } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { CfnTemplate } from './assembly';
import type { FunctionModel, MachineModel } from './stack-model';

/**
 * What applying a second cloud assembly over a running template-mode stack changes, decided as CloudFormation
 * decides an update: only resources whose properties changed are updated, each after the resources it refers
 * to, and a secret keeps its value unless its `GenerateSecretString` (or `SecretString`) changed.
 */

/** The logical ids a resource refers to: `Ref`, `Fn::GetAtt`, `${X}` and `${X.Attr}` in `Fn::Sub`, and `DependsOn`. */
export function referencesOf(resource: { Properties?: unknown; DependsOn?: unknown }): Set<string> {
  const found = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (!value || typeof value !== 'object') return;
    for (const [key, arg] of Object.entries(value)) {
      if (key === 'Ref' && typeof arg === 'string' && !arg.startsWith('AWS::')) found.add(arg);
      else if (key === 'Fn::GetAtt') found.add(Array.isArray(arg) ? String(arg[0]) : String(arg).split('.')[0]);
      else if (key === 'Fn::Sub') {
        const text = Array.isArray(arg) ? String(arg[0]) : String(arg);
        for (const [, name] of text.matchAll(/\$\{(?!!)([^}.]+)(?:\.[^}]*)?\}/g)) if (!name.startsWith('AWS::')) found.add(name);
        if (Array.isArray(arg)) walk(arg[1]);
      } else walk(arg);
    }
  };
  walk(resource.Properties);
  const dependsOn = resource.DependsOn;
  for (const id of Array.isArray(dependsOn) ? dependsOn : dependsOn ? [dependsOn] : []) found.add(String(id));
  return found;
}

/**
 * `changed` (logical ids) in the order CloudFormation may update them in `template`: each after every one it
 * reaches through the template's references (directly or through other resources, such as a role's policy
 * naming another function); among those free to go next, a seeded random pick, as CloudFormation runs
 * independent updates in parallel in no promised order.
 */
export function updateOrder(template: CfnTemplate, changed: readonly string[], random: () => number): string[] {
  const direct = new Map(Object.entries(template.Resources).map(([id, r]) => [id, referencesOf(r)]));
  const reach = (from: string): Set<string> => {
    const seen = new Set<string>();
    const stack = [...(direct.get(from) ?? [])];
    while (stack.length) {
      const id = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      stack.push(...(direct.get(id) ?? []));
    }
    return seen;
  };
  const after = new Map(changed.map((id) => [id, new Set([...reach(id)].filter((d) => d !== id && changed.includes(d)))]));
  const order: string[] = [];
  // Sorted first, so the seed alone decides the order, not the order the caller listed them in.
  const left = [...changed].sort();
  while (left.length) {
    const ready = left.filter((id) => [...after.get(id)!].every((d) => order.includes(d)));
    // A cycle (CloudFormation refuses such a template): the rest in the seeded order rather than never.
    const pool = ready.length ? ready : left;
    const next = pool[Math.floor(random() * pool.length)];
    order.push(next);
    left.splice(left.indexOf(next), 1);
  }
  return order;
}

/** The functions whose model differs between the assemblies, those only in the new one, and those only in the old one. */
export function functionChanges(before: readonly FunctionModel[], after: readonly FunctionModel[]) {
  const old = new Map(before.map((f) => [f.logicalId, f]));
  const fresh = new Map(after.map((f) => [f.logicalId, f]));
  return {
    changed: after.filter((f) => old.has(f.logicalId) && !isDeepStrictEqual(old.get(f.logicalId), f)).map((f) => f.logicalId),
    added: after.filter((f) => !old.has(f.logicalId)).map((f) => f.logicalId),
    removed: before.filter((f) => !fresh.has(f.logicalId)).map((f) => f.logicalId),
  };
}

/** The state machines whose definition changed (running executions keep the one they started with). */
export function machineChanges(before: readonly MachineModel[], after: readonly MachineModel[]): MachineModel[] {
  const old = new Map(before.map((m) => [m.arn, m.definition]));
  return after.filter((m) => old.has(m.arn) && old.get(m.arn) !== m.definition);
}

const GenerateSecretString = (value: unknown) =>
  (value ?? {}) as {
    SecretStringTemplate?: string;
    GenerateStringKey?: string;
    PasswordLength?: number;
    ExcludePunctuation?: boolean;
    ExcludeCharacters?: string;
  };

/**
 * The secrets CloudFormation gives a new value in this update: those whose `GenerateSecretString` or
 * `SecretString` changed (AWS::SecretsManager::Secret, "Update requires: No interruption", a new version of
 * the value: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-secretsmanager-secret.html).
 * Any other change (a description, a policy) keeps the value.
 */
export function regeneratedSecrets(before: CfnTemplate, after: CfnTemplate): string[] {
  return Object.entries(after.Resources)
    .filter(([id, r]) => {
      const old = before.Resources[id];
      if (r.Type !== 'AWS::SecretsManager::Secret' || old?.Type !== r.Type) return false;
      return (
        !isDeepStrictEqual(old.Properties?.GenerateSecretString, r.Properties?.GenerateSecretString) ||
        !isDeepStrictEqual(old.Properties?.SecretString, r.Properties?.SecretString)
      );
    })
    .map(([id]) => id);
}

/**
 * A secret's value as Secrets Manager generates it on create or on a changed `GenerateSecretString`: the JSON
 * of `SecretStringTemplate` with a random string of `PasswordLength` (default 32) under `GenerateStringKey`,
 * or `SecretString` as written.
 */
export function generatedSecretValue(properties: Record<string, unknown> | undefined): string {
  if (typeof properties?.SecretString === 'string') return properties.SecretString;
  const generate = GenerateSecretString(properties?.GenerateSecretString);
  const punctuation = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
  const alphabet = [
    ...`ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789${generate.ExcludePunctuation ? '' : punctuation}`,
  ].filter((c) => !(generate.ExcludeCharacters ?? '').includes(c));
  const random = Array.from({ length: generate.PasswordLength ?? 32 }, () => alphabet[randomInt(alphabet.length)]).join('');
  if (generate.SecretStringTemplate === undefined || generate.GenerateStringKey === undefined) return random;
  return JSON.stringify({ ...JSON.parse(generate.SecretStringTemplate), [generate.GenerateStringKey]: random });
}
