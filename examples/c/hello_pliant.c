/* Pliant from C: the drop-cube scene (examples/scenes/drop_cube.json) through the C ABI.
 * A 0.2 m jelly cube (E = 1e5 Pa, nu = 0.3, 1000 kg/m^3, 10 x 10 x 10 cells) falls from
 * 0.5 m onto the ground and settles; the program prints the mean heights of its top and
 * bottom faces after 300 frames (5 s).
 *
 * Build against the library (`cargo build --release -p pliant-capi`):
 *   cc -std=c99 -Icrates/pliant-capi/include examples/c/hello_pliant.c \
 *      -Ltarget/release -lpliant_capi -Wl,-rpath,$PWD/target/release -o hello_pliant
 *   ./hello_pliant
 */
#include <stdio.h>
#include <stdlib.h>

#include "pliant.h"

/* Prints the failing call's message and exits. */
static void check(PliantStatus status, const char *what) {
    if (status != PLIANT_STATUS_OK) {
        fprintf(stderr, "%s failed (%s): %s\n", what, pliant_status_name(status), pliant_last_error_message());
        exit(1);
    }
}

int main(void) {
    PliantStepConfig config;
    check(pliant_step_config_default(&config), "pliant_step_config_default");
    config.iterations = 20;
    PliantWorld world;
    check(pliant_world_create(&config, &world), "pliant_world_create");

    float up[3] = {0.0f, 1.0f, 0.0f}, origin[3] = {0.0f, 0.0f, 0.0f};
    check(pliant_world_add_plane(world, up, origin, 0.5f, NULL), "pliant_world_add_plane");

    PliantSolidDesc jelly;
    check(pliant_solid_desc_default(&jelly), "pliant_solid_desc_default");
    jelly.name = "cube";
    jelly.material = PLIANT_MATERIAL_STABLE_NEO_HOOKEAN;
    jelly.young_modulus = 1.0e5;
    jelly.poisson_ratio = 0.3;
    jelly.density = 1000.0;
    jelly.friction = 0.5f;
    jelly.translation[1] = 0.6f;
    float size[3] = {0.2f, 0.2f, 0.2f};
    uint32_t cells[3] = {10, 10, 10};
    PliantBody cube;
    check(pliant_world_add_box(world, &jelly, size, cells, &cube), "pliant_world_add_box");

    /* The top and bottom faces: the vertices at the highest and lowest start height. */
    size_t n = 0;
    check(pliant_body_vertex_count(world, cube, &n), "pliant_body_vertex_count");
    float *x = malloc(3 * n * sizeof(float));
    char *face = malloc(n);
    if (!x || !face) return 1;
    check(pliant_body_read_positions(world, cube, x, n, NULL), "pliant_body_read_positions");
    float lo = x[1], hi = x[1];
    for (size_t i = 0; i < n; i++) {
        if (x[3 * i + 1] < lo) lo = x[3 * i + 1];
        if (x[3 * i + 1] > hi) hi = x[3 * i + 1];
    }
    for (size_t i = 0; i < n; i++) {
        float y = x[3 * i + 1];
        face[i] = y > hi - 1e-5f * (hi - lo) ? 't' : y < lo + 1e-5f * (hi - lo) ? 'b' : 0;
    }

    PliantStepReport report;
    int fallbacks = 0;
    for (int frame = 1; frame <= 300; frame++) {
        check(pliant_world_step(world, &report), "pliant_world_step");
        fallbacks += (int)report.fallbacks;
        if (report.nan_detected) fprintf(stderr, "frame %d: a non-finite state was rolled back\n", frame);
        if (frame % 60 == 0)
            printf("t = %.2f s: kinetic energy %.3e J, fastest vertex %.3e m/s, closest to the ground %.3e m\n",
                   report.time, report.kinetic_energy, report.max_speed, report.min_obstacle_distance);
    }

    PliantEvent event;
    uint32_t has_event = 0;
    for (;;) {
        check(pliant_world_poll_event(world, &event, &has_event), "pliant_world_poll_event");
        if (!has_event) break;
        printf("event: %s\n", event.message);
    }

    check(pliant_body_read_positions(world, cube, x, n, NULL), "pliant_body_read_positions");
    double top = 0.0, bottom = 0.0;
    int tops = 0, bottoms = 0;
    for (size_t i = 0; i < n; i++) {
        if (face[i] == 't') top += x[3 * i + 1], tops++;
        if (face[i] == 'b') bottom += x[3 * i + 1], bottoms++;
    }
    top /= tops;
    bottom /= bottoms;
    printf("fallbacks: %d\n", fallbacks);
    printf("resting height: top %.6f m, bottom %.6f m, height %.6f m (%.3f mm shorter than 0.2 m)\n", top, bottom,
           top - bottom, 1e3 * (0.2 - (top - bottom)));

    free(face);
    free(x);
    check(pliant_world_destroy(world), "pliant_world_destroy");
    return 0;
}
