/** The terminal timeline is the shared timeline model rendered as text (functions/core/timeline.ts). */
export { describe, formatTimeline, type TimelineEvent } from '../functions/core/timeline';
