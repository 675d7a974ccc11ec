import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { CustomResourceModel } from './stack-model';

/** What a custom resource's function PUTs to the pre-signed `ResponseURL`. */
const Response = z.object({
  Status: z.enum(['SUCCESS', 'FAILED']),
  Reason: z.string().optional(),
  PhysicalResourceId: z.string().min(1),
  RequestId: z.string(),
  LogicalResourceId: z.string(),
});

/** CloudFormation waits an hour for a custom resource; locally a function that has not answered in a minute never will. */
const ANSWER_WITHIN_MS = 60_000;

/**
 * What CloudFormation does with a custom resource when the stack is created: it invokes the `ServiceToken`
 * function with a Create request and waits for the answer the function PUTs to the request's `ResponseURL`; a
 * FAILED answer fails the deploy. Each resource is created once per data directory (`file` records those
 * created, with their physical ids), as a deployed stack's resources are created once.
 */
export async function createCustomResources(options: {
  resources: readonly CustomResourceModel[];
  stackId: string;
  file: string;
  invoke: (functionArn: string, event: unknown) => Promise<unknown> | undefined;
  log: (line: string) => void;
}): Promise<number> {
  const created: Record<string, string> = existsSync(options.file) ? JSON.parse(readFileSync(options.file, 'utf8')) : {};
  const pending = options.resources.filter((r) => !(r.logicalId in created));
  if (!pending.length) return 0;
  const answers = new Map<string, (body: string) => void>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const answer = answers.get(String(req.url).slice(1));
      res.writeHead(answer ? 200 : 404).end();
      answer?.(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    for (const resource of pending) {
      const requestId = randomUUID();
      const answered = new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`custom resource ${resource.logicalId}: no answer within ${ANSWER_WITHIN_MS} ms`)),
          ANSWER_WITHIN_MS,
        );
        timer.unref();
        answers.set(requestId, (body) => {
          clearTimeout(timer);
          resolve(body);
        });
      });
      const invoked = options.invoke(resource.serviceToken, {
        RequestType: 'Create',
        ServiceToken: resource.serviceToken,
        ResponseURL: `${base}/${requestId}`,
        StackId: options.stackId,
        RequestId: requestId,
        ResourceType: resource.type,
        LogicalResourceId: resource.logicalId,
        ResourceProperties: resource.properties,
      });
      if (!invoked)
        throw new Error(`custom resource ${resource.logicalId}: its ServiceToken ${resource.serviceToken} is no function of the template`);
      // Settled either way below: a function that failed leaves its answer's timeout nobody awaits.
      answered.catch(() => undefined);
      // A function that fails without answering leaves CloudFormation waiting: here it fails the start.
      await Promise.race([answered, invoked.then(() => answered)]);
      const response = Response.parse(JSON.parse(await answered));
      if (response.Status === 'FAILED') throw new Error(`custom resource ${resource.logicalId}: CREATE_FAILED: ${response.Reason ?? ''}`);
      created[resource.logicalId] = response.PhysicalResourceId;
      writeFileSync(`${options.file}.tmp`, JSON.stringify(created, null, 2));
      renameSync(`${options.file}.tmp`, options.file);
      options.log(`custom resource ${resource.logicalId} (${resource.type}) created: ${response.Reason ?? response.PhysicalResourceId}`);
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return pending.length;
}
