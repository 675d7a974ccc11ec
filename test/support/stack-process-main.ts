import '../../local/env-defaults';
import { runStackProcess } from './stack-process';

runStackProcess().catch((error: Error) => {
  console.error(`stack process failed: ${error.message}`);
  process.exit(1);
});
