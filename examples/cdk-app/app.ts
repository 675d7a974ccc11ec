import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import { ToolRunner } from 'toolrunner/cdk';

const app = new App();
const stack = new Stack(app, 'NotesAgent');
const runner = new ToolRunner(stack, 'Runner', {
  tools: { entry: 'tools.ts', environment: { NOTES_API: 'https://notes.example.com' } },
});
new CfnOutput(stack, 'ApiUrl', { value: runner.apiUrl });
