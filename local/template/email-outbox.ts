import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** An SNS subscription of the template (`AWS::SNS::Subscription`). */
export interface SubscriptionModel {
  logicalId: string;
  topicArn: string;
  protocol: string;
  endpoint: string;
  filterPolicy?: Record<string, unknown>;
}

/** What a topic delivers: the subject, the text for email, and the message attributes a filter policy reads. */
export interface Delivery {
  topicArn: string;
  subject?: string;
  text: string;
  attributes: Record<string, string>;
}

interface SubscriptionState {
  token: string;
  confirmed: boolean;
}

const FROM = 'AWS Notifications <no-reply@sns.amazonaws.com>';

/**
 * SNS's email protocol, delivered to files: each email subscription is mailed its confirmation request first
 * (a link that confirms it when opened), and receives nothing until it is confirmed, as on AWS. One file per
 * message in `dir`, numbered in the order sent. Which subscriptions are confirmed survives restarts (in
 * `statePath`), as a confirmed subscription does on AWS.
 */
export class EmailOutbox {
  private readonly states: Record<string, SubscriptionState>;
  private server?: Server;
  private confirmUrl = '';
  private sequence: number;

  constructor(
    readonly dir: string,
    private readonly statePath: string,
    private readonly subscriptions: SubscriptionModel[],
    private readonly log: (line: string) => void = () => undefined,
  ) {
    mkdirSync(dir, { recursive: true });
    this.sequence = readdirSync(dir).filter((f) => /^\d+-/.test(f)).length;
    this.states = existsSync(statePath) ? JSON.parse(readFileSync(statePath, 'utf8')) : {};
  }

  private get emails(): SubscriptionModel[] {
    return this.subscriptions.filter((s) => s.protocol === 'email' || s.protocol === 'email-json');
  }

  private keyOf(s: SubscriptionModel): string {
    return `${s.topicArn} ${s.endpoint}`;
  }

  /** Serves the confirmation links and mails a confirmation request to every email subscription not yet confirmed. */
  async start(): Promise<void> {
    if (!this.emails.length) return;
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://local');
      const token = url.searchParams.get('Token');
      const entry = Object.entries(this.states).find(([, s]) => s.token === token);
      if (url.searchParams.get('Action') !== 'ConfirmSubscription' || !entry) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Invalid token\n');
        return;
      }
      entry[1].confirmed = true;
      this.save();
      this.log(`sns: subscription confirmed: ${entry[0]}`);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('Subscription confirmed!\n');
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.confirmUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
    for (const s of this.emails) {
      const key = this.keyOf(s);
      if (this.states[key]?.confirmed) continue;
      const state = { token: randomBytes(32).toString('hex'), confirmed: false };
      this.states[key] = state;
      const link = `${this.confirmUrl}?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(s.topicArn)}&Token=${state.token}`;
      this.write(
        s.endpoint,
        'AWS Notification - Subscription Confirmation',
        `You have chosen to subscribe to the topic:\n${s.topicArn}\n\nTo confirm this subscription, click or visit the link below (If this was in error no action is necessary):\nConfirm subscription: ${link}\n`,
        'confirmation',
      );
    }
    this.save();
  }

  /** Delivers a published message to the topic's confirmed email subscriptions whose filter policy it matches. */
  deliver(message: Delivery): number {
    let delivered = 0;
    for (const s of this.emails) {
      if (s.topicArn !== message.topicArn || !this.states[this.keyOf(s)]?.confirmed) continue;
      if (s.filterPolicy && !matchesFilter(s.filterPolicy, message.attributes)) continue;
      this.write(
        s.endpoint,
        message.subject ?? 'AWS Notification Message',
        `${message.text}\n\n--\nIf you wish to stop receiving notifications from this topic, unsubscribe in the SNS console.\n`,
        'message',
      );
      delivered += 1;
    }
    return delivered;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });
  }

  private write(to: string, subject: string, body: string, kind: string): void {
    this.sequence += 1;
    const file = join(this.dir, `${String(this.sequence).padStart(4, '0')}-${kind}-${to.replace(/[^\w.@-]/g, '_')}.eml`);
    writeFileSync(file, `From: ${FROM}\nTo: ${to}\nDate: ${new Date().toUTCString()}\nSubject: ${subject}\n\n${body}`);
  }

  private save(): void {
    writeFileSync(this.statePath, `${JSON.stringify(this.states, null, 2)}\n`);
  }
}

/** An SNS filter policy on message attributes, in its simple form: each key a list of allowed string values. */
function matchesFilter(policy: Record<string, unknown>, attributes: Record<string, string>): boolean {
  return Object.entries(policy).every(([key, allowed]) => Array.isArray(allowed) && allowed.some((v) => v === attributes[key]));
}
