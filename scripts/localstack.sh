#!/usr/bin/env bash
# Deploys the stack to a running LocalStack and runs the e2e suite against it.
# Not verified on the development machine (no Docker engine there); see README "What is verified where".
set -euo pipefail
cd "$(dirname "$0")/.."
export AWS_ENDPOINT_URL="${AWS_ENDPOINT_URL:-http://localhost.localstack.cloud:4566}"
export AWS_REGION="${AWS_REGION:-us-east-1}" AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export CDK_DEFAULT_ACCOUNT=000000000000 CDK_DEFAULT_REGION="$AWS_REGION"

: "${TOOLRUNNER_SANDBOX_URL:?run 'npm run sandbox' where the stack can reach it and set TOOLRUNNER_SANDBOX_URL}"
npx cdk bootstrap "aws://000000000000/$AWS_REGION"
npx cdk deploy --require-approval never -c sandboxUrl="$TOOLRUNNER_SANDBOX_URL" --outputs-file cdk.out/outputs.json

secret=$(node -e "console.log(Object.values(require('./cdk.out/outputs.json'))[0].ConfigSecretArn)")
api=$(node -e "console.log(Object.values(require('./cdk.out/outputs.json'))[0].ApiUrl)")
keys=$(node -e "const k=()=>'tr_'+require('crypto').randomBytes(24).toString('base64url');console.log(JSON.stringify({agent:k(),approver:k(),reviewer:k(),admin:k(),other:k()}))")
current=$(aws secretsmanager get-secret-value --secret-id "$secret" --query SecretString --output text)
node -e "
const c=JSON.parse(process.argv[1]), k=JSON.parse(process.argv[2]);
c.principals=[{id:'agent',key:k.agent,roles:['agent'],tools:'*'},{id:'approver',key:k.approver,roles:['approver'],tools:[]},
{id:'reviewer',key:k.reviewer,roles:['reviewer'],tools:[]},{id:'admin',key:k.admin,roles:['admin'],tools:'*'},{id:'other',key:k.other,roles:['agent'],tools:['get_order']}];
console.log(JSON.stringify(c))" "$current" "$keys" > cdk.out/principals.json
aws secretsmanager put-secret-value --secret-id "$secret" --secret-string file://cdk.out/principals.json >/dev/null

TARGET=localstack TOOLRUNNER_API_URL="$api" TOOLRUNNER_KEYS="$keys" npx vitest run test/e2e
