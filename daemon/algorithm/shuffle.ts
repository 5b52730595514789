/** Seeded randomness for the algorithm (task order): the engine's mulberry32, so runs and resumes are reproducible. */
export { makeRng as rng } from '../model/sampling.js';
