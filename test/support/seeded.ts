/** The tests' PRNG is the one template mode's faults replay from a seed. */
export { seeded } from '../../local/seeded';
