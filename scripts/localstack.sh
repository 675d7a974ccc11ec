#!/usr/bin/env bash
# Deploys the demo stack to a running LocalStack and runs the e2e suite against it (TARGET=localstack).
# Not run on the development machine (no Docker engine there); README "What is verified where" says what was.
#
# Needs: LocalStack (Lambda, Step Functions, DynamoDB, API Gateway v2 (HTTP APIs), SNS, Secrets Manager,
# Scheduler, CloudFormation, S3, IAM, Logs, CloudWatch). LocalStack's image requires an auth token
# (LOCALSTACK_AUTH_TOKEN, from your LocalStack account; HTTP APIs need a plan that includes API Gateway v2).
# Start it with LAMBDA_IGNORE_ARCHITECTURE=1, because the functions are arm64 and an x86 host cannot run
# them otherwise:
#   LOCALSTACK_AUTH_TOKEN=... LAMBDA_IGNORE_ARCHITECTURE=1 localstack start -d
# plus the AWS CLI v2 (it honours AWS_ENDPOINT_URL) and Node.js 20+.
set -euo pipefail
cd "$(dirname "$0")/.."

edge="${LOCALSTACK_URL:-http://localhost.localstack.cloud:4566}"
# One endpoint for every SDK and the CLI; S3 separately, path-style: CDK's asset upload would otherwise
# address <bucket>.localhost.localstack.cloud, a virtual-hosted name LocalStack does not serve here.
export AWS_ENDPOINT_URL="$edge" AWS_ENDPOINT_URL_S3="${AWS_ENDPOINT_URL_S3:-http://s3.localhost.localstack.cloud:4566}" AWS_S3_FORCE_PATH_STYLE=1
export AWS_REGION="${AWS_REGION:-us-east-1}" AWS_DEFAULT_REGION="${AWS_REGION:-us-east-1}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export CDK_DEFAULT_ACCOUNT=000000000000 CDK_DEFAULT_REGION="$AWS_REGION"

[ -n "${LOCALSTACK_AUTH_TOKEN:-}" ] || echo "LOCALSTACK_AUTH_TOKEN is not set here: LocalStack refuses to start without it (set it where LocalStack starts)" >&2
health=$(curl -fsS "$edge/_localstack/health") || { echo "LocalStack is not answering at $edge: start it with LOCALSTACK_AUTH_TOKEN=... LAMBDA_IGNORE_ARCHITECTURE=1 localstack start -d" >&2; exit 2; }
echo "LocalStack: $health" | head -c 400; echo

# The sandbox upstreams on this host. The Lambdas run in containers and reach the host through Docker's
# host gateway; the tests reach it on loopback.
sandbox_port="${SANDBOX_PORT:-3001}"
export TOOLRUNNER_SANDBOX_URL="${TOOLRUNNER_SANDBOX_URL:-http://127.0.0.1:$sandbox_port}"
sandbox_for_lambdas="${SANDBOX_URL_FOR_LAMBDAS:-http://host.docker.internal:$sandbox_port}"
if ! curl -fsS "$TOOLRUNNER_SANDBOX_URL/_sandbox/ledger" >/dev/null 2>&1; then
  SANDBOX_HOST=0.0.0.0 SANDBOX_PORT="$sandbox_port" TOOLRUNNER_DATA_DIR="$(mktemp -d)" npm run --silent sandbox &
  sandbox_pid=$!
  trap 'kill "$sandbox_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 1 50); do curl -fsS "$TOOLRUNNER_SANDBOX_URL/_sandbox/ledger" >/dev/null 2>&1 && break; sleep 0.2; done
fi

# A fixed HTTP API id (LocalStack's _custom_id_ tag), so the API's URL, and with it the approval links the
# Lambdas sign, are known before the deploy. LocalStack serves an HTTP API's $default stage at
# http://<id>.execute-api.localhost.localstack.cloud:4566/<path> (no stage in the path, as on AWS),
# never at amazonaws.com.
api_id="${TOOLRUNNER_API_ID:-toolrunner}"
api_url="http://$api_id.execute-api.localhost.localstack.cloud:4566"

mkdir -p cdk.out
npx cdklocal bootstrap "aws://000000000000/$AWS_REGION"
npx cdklocal deploy --require-approval never \
  -c sandboxUrl="$sandbox_for_lambdas" -c apiCustomId="$api_id" -c publicBaseUrl="$api_url" \
  --outputs-file cdk.out/localstack-outputs.json

output() { node -e "console.log(Object.values(require('./cdk.out/localstack-outputs.json'))[0][process.argv[1]])" "$1"; }
secret=$(output ConfigSecretArn)
sweeper=$(output SweeperFunctionName)
[ "$(output ApiId)" = "$api_id" ] || { echo "LocalStack ignored the _custom_id_ tag: the API id is $(output ApiId), approval links point at $api_url" >&2; exit 1; }

keys=$(node -e "const k=()=>'tr_'+require('crypto').randomBytes(24).toString('base64url');console.log(JSON.stringify({agent:k(),approver:k(),reviewer:k(),admin:k(),other:k()}))")
current=$(aws secretsmanager get-secret-value --secret-id "$secret" --query SecretString --output text)
node -e "
const c=JSON.parse(process.argv[1]), k=JSON.parse(process.argv[2]);
c.principals=[{id:'agent',key:k.agent,roles:['agent'],tools:'*'},{id:'approver',key:k.approver,roles:['approver'],tools:[]},
{id:'reviewer',key:k.reviewer,roles:['reviewer'],tools:[]},{id:'admin',key:k.admin,roles:['admin'],tools:'*'},{id:'other',key:k.other,roles:['agent'],tools:['get_order']}];
console.log(JSON.stringify(c))" "$current" "$keys" > cdk.out/principals.json
aws secretsmanager put-secret-value --secret-id "$secret" --secret-string file://cdk.out/principals.json >/dev/null

# LocalStack's EventBridge Scheduler stores the sweep schedule but does not fire it: invoke the sweeper
# every few seconds instead, as the schedule would every minute on AWS.
( while sleep 5; do aws lambda invoke --function-name "$sweeper" --cli-binary-format raw-in-base64-out --payload '{}' /dev/null >/dev/null 2>&1 || true; done ) &
sweeper_loop=$!
trap 'kill "$sweeper_loop" 2>/dev/null || true; [ -n "${sandbox_pid:-}" ] && kill "$sandbox_pid" 2>/dev/null || true' EXIT

TARGET=localstack TOOLRUNNER_API_URL="$api_url" TOOLRUNNER_KEYS="$keys" npx vitest run test/e2e
