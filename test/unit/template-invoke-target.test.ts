import { describe, expect, it } from 'vitest';
import { type FunctionModel, invokeTarget } from '../../local/template/stack-model';

const fnArn = 'arn:aws:lambda:us-east-1:000000000000:function:Stack-ToolsFunction-ABC';
const model = {
  functions: [{ name: 'Stack-ToolsFunction-ABC', arn: fnArn } as FunctionModel],
  versions: [{ logicalId: 'ToolsFunctionCurrentVersion1', arn: `${fnArn}:42`, functionArn: fnArn, version: '42' }],
};

describe('template mode: what Lambda Invoke runs for a FunctionName', () => {
  it('a name or ARN runs the function as $LATEST; a qualified one runs that version, checked by IAM on the qualified ARN', () => {
    expect(invokeTarget(model, 'Stack-ToolsFunction-ABC')).toEqual({ arn: fnArn, functionArn: fnArn, version: '$LATEST' });
    expect(invokeTarget(model, fnArn)).toEqual({ arn: fnArn, functionArn: fnArn, version: '$LATEST' });
    expect(invokeTarget(model, `${fnArn}:42`)).toEqual({ arn: `${fnArn}:42`, functionArn: fnArn, version: '42' });
    expect(invokeTarget(model, 'Stack-ToolsFunction-ABC:42')).toEqual({ arn: `${fnArn}:42`, functionArn: fnArn, version: '42' });
  });

  it('a version the template does not have, or another function, is not found (as Lambda answers ResourceNotFound)', () => {
    expect(invokeTarget(model, `${fnArn}:41`)).toBeUndefined();
    expect(invokeTarget(model, 'arn:aws:lambda:us-east-1:000000000000:function:Other:42')).toBeUndefined();
    expect(invokeTarget(model, 'Other')).toBeUndefined();
  });
});
