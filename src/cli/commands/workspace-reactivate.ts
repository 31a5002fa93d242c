import { workspaceStatusCommand } from './workspace-deactivate.js';

export default workspaceStatusCommand('reactivate');
