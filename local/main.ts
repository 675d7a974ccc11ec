import './env-defaults';
import { runEmbeddedStack } from './run-stack';

runEmbeddedStack('npm start').catch((error: Error) => {
  console.error(`npm start failed: ${error.message}`);
  process.exit(1);
});
