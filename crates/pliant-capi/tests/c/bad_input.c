/* Every entry point of Pliant's C ABI given bad input: null pointers, NaN, negative stiffness,
 * unknown constants, stale world and body ids, buffers too small. Each call must return the
 * expected error code with a message, never crash; the world must then still step cleanly.
 * Run by crates/pliant-capi/tests/c_programs.rs, which also checks that every function in
 * pliant.h is called here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pliant.h"

static int checks = 0, failures = 0;

static void expect(PliantStatus got, PliantStatus want, const char *call, int line) {
    checks++;
    const char *message = pliant_last_error_message();
    if (got != want) {
        failures++;
        printf("line %d: %s returned %s, expected %s (%s)\n", line, call, pliant_status_name(got),
               pliant_status_name(want), message);
    } else if (want != PLIANT_STATUS_OK) {
        /* The message is this call's own: it starts with the function's name. */
        size_t name = strcspn(call, "(");
        if (message == NULL || strncmp(message, call, name) != 0 || message[name] != ':') {
            failures++;
            printf("line %d: %s failed without a message of its own (%s)\n", line, call, message);
        }
    }
}

#define EXPECT(call, want) expect((call), (want), #call, __LINE__)
#define OK PLIANT_STATUS_OK
#define NUL PLIANT_STATUS_NULL_POINTER
#define BAD PLIANT_STATUS_INVALID_ARGUMENT
#define STALE PLIANT_STATUS_INVALID_HANDLE

int main(void) {
    const float nan = NAN;
    PliantWorld none = {0}, world, gone;
    PliantBody nobody = {0}, cube, removed, cloth;
    PliantStepConfig config;
    PliantSolidDesc solid;
    PliantClothDesc fabric;
    PliantStepReport report;
    PliantIslandReport island;
    PliantEvent event;
    uint32_t u = 0, has = 0;
    size_t count = 0;
    double t = 0.0;
    uint64_t frame = 0;
    float v[3] = {0.0f, 1.0f, 0.0f}, zero[3] = {0.0f, 0.0f, 0.0f}, nanv[3] = {0.0f, nan, 0.0f};
    float size[3] = {0.2f, 0.2f, 0.2f}, size2[2] = {0.5f, 0.5f}, buf[3 * 4096];
    uint32_t cells[3] = {2, 2, 2}, cells2[2] = {4, 4}, huge[3] = {3000, 3000, 3000}, tri[3 * 64];

    /* Names and versions take anything. */
    checks++;
    if (strcmp(pliant_status_name(999), "unknown status") != 0 || pliant_version()[0] == '\0') failures++;

    /* Defaults need somewhere to go. */
    EXPECT(pliant_step_config_default(NULL), NUL);
    EXPECT(pliant_solid_desc_default(NULL), NUL);
    EXPECT(pliant_cloth_desc_default(NULL), NUL);
    EXPECT(pliant_step_config_default(&config), OK);
    EXPECT(pliant_solid_desc_default(&solid), OK);
    EXPECT(pliant_cloth_desc_default(&fabric), OK);

    /* Worlds: bad configurations, null out-pointers, stale ids. */
    EXPECT(pliant_world_create(NULL, NULL), NUL);
    config.dt = nan;
    EXPECT(pliant_world_create(&config, &world), PLIANT_STATUS_CONFIG);
    checks++;
    if (world.id != 0) failures++, printf("a failed create left a world id\n");
    pliant_step_config_default(&config);
    config.backend = 7;
    EXPECT(pliant_world_create(&config, &world), BAD);
    pliant_step_config_default(&config);
    config.budget_ms = -4.0;
    EXPECT(pliant_world_create(&config, &world), PLIANT_STATUS_CONFIG);
    pliant_step_config_default(&config);
    config.gravity[1] = nan;
    EXPECT(pliant_world_create(&config, &world), PLIANT_STATUS_CONFIG);
    pliant_step_config_default(&config);
    config.fallback = 99;
    EXPECT(pliant_world_create(&config, &world), BAD);
    pliant_step_config_default(&config);
    EXPECT(pliant_world_create(&config, &gone), OK);
    EXPECT(pliant_world_destroy(gone), OK);
    EXPECT(pliant_world_destroy(gone), STALE);
    EXPECT(pliant_world_destroy(none), STALE);
    EXPECT(pliant_world_create(NULL, &world), OK);
    checks++;
    if (world.id == gone.id) failures++, printf("a new world reused a destroyed world's id\n");

    EXPECT(pliant_world_get_config(world, NULL), NUL);
    EXPECT(pliant_world_get_config(gone, &config), STALE);
    EXPECT(pliant_world_set_config(world, NULL), NUL);
    EXPECT(pliant_world_set_config(gone, &config), STALE);
    config.iterations = 0;
    EXPECT(pliant_world_set_config(world, &config), PLIANT_STATUS_CONFIG);
    pliant_step_config_default(&config);
    config.contact_offset = -1.0f;
    EXPECT(pliant_world_set_config(world, &config), PLIANT_STATUS_CONFIG);
    pliant_step_config_default(&config);
    EXPECT(pliant_world_set_config(world, &config), OK);
    EXPECT(pliant_world_set_budget_ms(world, -1.0), PLIANT_STATUS_CONFIG);
    EXPECT(pliant_world_set_budget_ms(world, nan), PLIANT_STATUS_CONFIG);
    EXPECT(pliant_world_set_budget_ms(world, INFINITY), PLIANT_STATUS_CONFIG);
    EXPECT(pliant_world_set_budget_ms(gone, 4.0), STALE);
    EXPECT(pliant_world_set_budget_ms(world, 0.0), OK);
    EXPECT(pliant_world_step(gone, &report), STALE);
    EXPECT(pliant_world_step(none, NULL), STALE);
    EXPECT(pliant_world_time(gone, &t, &frame), STALE);
    EXPECT(pliant_world_time(world, NULL, NULL), OK);
    EXPECT(pliant_world_island(world, 0, &island), BAD); /* no step yet: no island */
    EXPECT(pliant_world_island(gone, 0, &island), STALE);
    EXPECT(pliant_world_island_bodies(gone, 0, NULL, 0, &count), STALE);
    EXPECT(pliant_world_island_bodies(world, 5, NULL, 0, &count), BAD);
    EXPECT(pliant_world_poll_event(world, NULL, &has), NUL);
    EXPECT(pliant_world_poll_event(world, &event, NULL), NUL);
    EXPECT(pliant_world_poll_event(gone, &event, &has), STALE);

    /* Obstacles: NaN, zero normals, negative sizes and friction. */
    EXPECT(pliant_world_add_ground(world, nan, 0.5f, NULL), PLIANT_STATUS_OBSTACLE);
    EXPECT(pliant_world_add_ground(world, 0.0f, -0.5f, NULL), PLIANT_STATUS_OBSTACLE);
    EXPECT(pliant_world_add_ground(gone, 0.0f, 0.5f, NULL), STALE);
    EXPECT(pliant_world_add_plane(world, NULL, zero, 0.5f, NULL), NUL);
    EXPECT(pliant_world_add_plane(world, zero, zero, 0.5f, NULL), PLIANT_STATUS_OBSTACLE);
    EXPECT(pliant_world_add_plane(world, nanv, zero, 0.5f, NULL), BAD);
    EXPECT(pliant_world_add_box_obstacle(world, zero, NULL, NULL, 0.5f, NULL), NUL);
    float negative[3] = {-1.0f, 1.0f, 1.0f}, zero_quat[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    EXPECT(pliant_world_add_box_obstacle(world, zero, negative, NULL, 0.5f, NULL), PLIANT_STATUS_OBSTACLE);
    EXPECT(pliant_world_add_box_obstacle(world, zero, size, zero_quat, 0.5f, NULL), BAD);
    EXPECT(pliant_world_add_sphere_obstacle(world, zero, -1.0f, 0.5f, NULL), PLIANT_STATUS_OBSTACLE);
    EXPECT(pliant_world_add_sphere_obstacle(world, nanv, 1.0f, 0.5f, NULL), BAD);
    EXPECT(pliant_world_add_sphere_obstacle(gone, zero, 1.0f, 0.5f, NULL), STALE);
    EXPECT(pliant_world_obstacle_count(world, NULL), NUL);
    EXPECT(pliant_world_obstacle_count(world, &u), OK);
    checks++;
    if (u != 0) failures++, printf("a rejected obstacle was added: %u obstacles\n", u);
    EXPECT(pliant_world_remove_obstacle(world, 0), BAD);
    EXPECT(pliant_world_add_ground(world, 0.0f, 0.5f, &u), OK);
    EXPECT(pliant_world_remove_obstacle(gone, 0), STALE);

    /* Solids: negative stiffness, NaN, bad constants, meshes that are not meshes. */
    solid.young_modulus = -1.0e5;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), PLIANT_STATUS_MATERIAL);
    checks++;
    if (cube.id != 0) failures++, printf("a failed add left a body id\n");
    pliant_solid_desc_default(&solid);
    solid.young_modulus = nan;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), PLIANT_STATUS_MATERIAL);
    pliant_solid_desc_default(&solid);
    solid.poisson_ratio = 0.5;
    EXPECT(pliant_world_add_sphere(world, &solid, 0.1f, 4, &cube), PLIANT_STATUS_MATERIAL);
    pliant_solid_desc_default(&solid);
    solid.density = -1.0;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), PLIANT_STATUS_BODY);
    pliant_solid_desc_default(&solid);
    solid.friction = nan;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), PLIANT_STATUS_BODY);
    pliant_solid_desc_default(&solid);
    solid.translation[0] = nan;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), BAD);
    pliant_solid_desc_default(&solid);
    solid.rotation[3] = 0.0f;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), BAD);
    pliant_solid_desc_default(&solid);
    solid.material = 42;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), BAD);
    pliant_solid_desc_default(&solid);
    solid.solver = 42;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), BAD);
    pliant_solid_desc_default(&solid);
    solid.self_collision = 2;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), BAD);
    pliant_solid_desc_default(&solid);
    solid.name = "\xff\xfe";
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), BAD);
    pliant_solid_desc_default(&solid);
    EXPECT(pliant_world_add_box(world, NULL, size, cells, &cube), NUL);
    EXPECT(pliant_world_add_box(world, &solid, NULL, cells, &cube), NUL);
    EXPECT(pliant_world_add_box(world, &solid, size, NULL, &cube), NUL);
    EXPECT(pliant_world_add_box(world, &solid, size, cells, NULL), NUL);
    EXPECT(pliant_world_add_box(world, &solid, size, huge, &cube), BAD);
    EXPECT(pliant_world_add_box(world, &solid, nanv, cells, &cube), BAD);
    EXPECT(pliant_world_add_box(world, &solid, negative, cells, &cube), PLIANT_STATUS_MESH);
    EXPECT(pliant_world_add_box(gone, &solid, size, cells, &cube), STALE);
    EXPECT(pliant_world_add_sphere(world, &solid, nan, 4, &cube), PLIANT_STATUS_MESH);
    EXPECT(pliant_world_add_sphere(world, &solid, 0.1f, 100000, &cube), BAD);
    EXPECT(pliant_world_add_sphere(gone, &solid, 0.1f, 4, &cube), STALE);
    float tet_x[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    uint32_t tet_ok[4] = {0, 1, 2, 3}, tet_flat[4] = {0, 1, 2, 2}, tet_out[4] = {0, 1, 2, 9};
    EXPECT(pliant_world_add_tet_mesh(world, &solid, NULL, 4, tet_ok, 1, &cube), NUL);
    EXPECT(pliant_world_add_tet_mesh(world, &solid, tet_x, 4, NULL, 1, &cube), NUL);
    EXPECT(pliant_world_add_tet_mesh(world, &solid, tet_x, 4, tet_flat, 1, &cube), PLIANT_STATUS_MESH);
    EXPECT(pliant_world_add_tet_mesh(world, &solid, tet_x, 4, tet_out, 1, &cube), PLIANT_STATUS_MESH);
    EXPECT(pliant_world_add_tet_mesh(world, &solid, tet_x, 0, tet_ok, 0, &cube), PLIANT_STATUS_MESH);
    tet_x[4] = nan;
    EXPECT(pliant_world_add_tet_mesh(world, &solid, tet_x, 4, tet_ok, 1, &cube), BAD);
    tet_x[4] = 0.0f;
    EXPECT(pliant_world_add_tet_mesh(gone, &solid, tet_x, 4, tet_ok, 1, &cube), STALE);

    /* Cloth. */
    fabric.thickness = -1.0;
    EXPECT(pliant_world_add_cloth_grid(world, &fabric, size2, cells2, &cloth), PLIANT_STATUS_MATERIAL);
    pliant_cloth_desc_default(&fabric);
    fabric.young_modulus = -2.0e6;
    EXPECT(pliant_world_add_cloth_grid(world, &fabric, size2, cells2, &cloth), PLIANT_STATUS_MATERIAL);
    pliant_cloth_desc_default(&fabric);
    EXPECT(pliant_world_add_cloth_grid(world, NULL, size2, cells2, &cloth), NUL);
    EXPECT(pliant_world_add_cloth_grid(world, &fabric, NULL, cells2, &cloth), NUL);
    EXPECT(pliant_world_add_cloth_grid(world, &fabric, nanv, cells2, &cloth), BAD);
    EXPECT(pliant_world_add_cloth_grid(world, &fabric, size2, huge, &cloth), BAD);
    EXPECT(pliant_world_add_cloth_grid(gone, &fabric, size2, cells2, &cloth), STALE);
    float tri_x[9] = {0, 0, 0, 1, 0, 0, 0, 0, 1};
    uint32_t tri_ok[3] = {0, 1, 2}, tri_out[3] = {0, 1, 7};
    EXPECT(pliant_world_add_cloth_mesh(world, &fabric, tri_x, 3, tri_out, 1, &cloth), PLIANT_STATUS_MESH);
    EXPECT(pliant_world_add_cloth_mesh(world, &fabric, tri_x, 3, NULL, 1, &cloth), NUL);
    EXPECT(pliant_world_add_cloth_mesh(gone, &fabric, tri_x, 3, tri_ok, 1, &cloth), STALE);
    EXPECT(pliant_world_add_cloth_mesh(world, &fabric, tri_x, 3, tri_ok, 1, &cloth), OK);
    EXPECT(pliant_world_remove_body(world, cloth), OK);

    /* A good cube, and one removed. */
    solid.translation[1] = 0.3f;
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &cube), OK);
    EXPECT(pliant_world_add_box(world, &solid, size, cells, &removed), OK);
    EXPECT(pliant_world_remove_body(world, removed), OK);
    EXPECT(pliant_world_remove_body(world, removed), STALE);
    EXPECT(pliant_world_remove_body(world, nobody), STALE);
    EXPECT(pliant_world_remove_body(gone, cube), STALE);
    EXPECT(pliant_world_body_count(world, NULL), NUL);
    EXPECT(pliant_world_body_count(gone, &u), STALE);
    EXPECT(pliant_world_body_count(world, &u), OK);
    checks++;
    if (u != 1) failures++, printf("%u bodies, expected 1\n", u);

    /* A body of another world is not in this one. */
    PliantWorld other;
    PliantBody stranger;
    EXPECT(pliant_world_create(NULL, &other), OK);
    /* Made so that its id within its world equals the cube's (slot 0, reused once). */
    EXPECT(pliant_world_add_box(other, &solid, size, cells, &stranger), OK);
    EXPECT(pliant_world_remove_body(other, stranger), OK);
    EXPECT(pliant_world_add_box(other, &solid, size, cells, &stranger), OK);
    checks++;
    if (stranger.id != cube.id) failures++, printf("the stranger's id %llu differs from the cube's %llu\n", (unsigned long long)stranger.id, (unsigned long long)cube.id);
    EXPECT(pliant_body_set_velocity(world, stranger, v), STALE);
    EXPECT(pliant_body_read_positions(world, stranger, buf, 4096, NULL), STALE);
    EXPECT(pliant_world_remove_body(world, stranger), STALE);
    EXPECT(pliant_world_destroy(other), OK);
    /* An early failure still clears the out-parameter. */
    PliantBody kept = cube;
    EXPECT(pliant_world_add_box(world, &solid, NULL, cells, &kept), NUL);
    checks++;
    if (kept.id != 0 || kept.world != 0) failures++, printf("a failed add kept an old body id\n");

    EXPECT(pliant_body_set_velocity(world, cube, NULL), NUL);
    EXPECT(pliant_body_set_velocity(world, cube, nanv), BAD);
    EXPECT(pliant_body_set_velocity(world, removed, v), STALE);
    EXPECT(pliant_body_set_velocity(gone, cube, v), STALE);

    float moved[3 * 27];
    EXPECT(pliant_body_read_positions(world, cube, moved, 27, NULL), OK);
    EXPECT(pliant_body_set_positions(world, cube, NULL, 27), NUL);
    EXPECT(pliant_body_set_positions(world, cube, moved, 26), BAD); /* one per vertex */
    moved[40] = nan;
    EXPECT(pliant_body_set_positions(world, cube, moved, 27), BAD);
    moved[40] = 0.1f;
    EXPECT(pliant_body_set_positions(world, removed, moved, 27), STALE);
    EXPECT(pliant_body_set_positions(gone, cube, moved, 27), STALE);
    EXPECT(pliant_body_read_positions(world, cube, moved, 27, NULL), OK);
    EXPECT(pliant_body_set_positions(world, cube, moved, 27), OK);

    /* Pins. */
    uint32_t pin_bad[1] = {1000}, pin_ok[2] = {0, 1};
    EXPECT(pliant_body_add_pin(world, cube, pin_bad, 1, 0, &u), PLIANT_STATUS_BODY);
    EXPECT(pliant_body_add_pin(world, cube, pin_bad, 1, 1, &u), PLIANT_STATUS_BODY);
    EXPECT(pliant_body_add_pin(world, cube, NULL, 2, 0, &u), NUL);
    EXPECT(pliant_body_add_pin(world, cube, pin_ok, 0, 0, &u), PLIANT_STATUS_BODY);
    EXPECT(pliant_body_add_pin(world, cube, pin_ok, 2, 5, &u), BAD);
    EXPECT(pliant_body_add_pin(world, removed, pin_ok, 2, 0, &u), STALE);
    EXPECT(pliant_body_add_pin(gone, cube, pin_ok, 2, 0, &u), STALE);
    EXPECT(pliant_body_add_pin(world, cube, pin_ok, 2, 1, &u), OK);
    float targets[6] = {0, 0.3f, 0, 0, 0.3f, 0.1f}, nan_targets[6] = {0, 0, 0, 0, nan, 0};
    EXPECT(pliant_body_set_pin_targets(world, cube, u, targets, 1), PLIANT_STATUS_INVALID_ARGUMENT);
    EXPECT(pliant_body_set_pin_targets(world, cube, u, nan_targets, 2), BAD);
    EXPECT(pliant_body_set_pin_targets(world, cube, u, NULL, 2), NUL);
    EXPECT(pliant_body_set_pin_targets(world, cube, u + 1, targets, 2), PLIANT_STATUS_NO_SUCH_PIN);
    EXPECT(pliant_body_set_pin_targets(world, removed, u, targets, 2), STALE);
    EXPECT(pliant_body_set_pin_targets(gone, cube, u, targets, 2), STALE);
    EXPECT(pliant_body_remove_pin(world, cube, 7), PLIANT_STATUS_NO_SUCH_PIN);
    EXPECT(pliant_body_remove_pin(world, removed, 0), STALE);
    EXPECT(pliant_body_remove_pin(gone, cube, 0), STALE);
    EXPECT(pliant_body_remove_pin(world, cube, u), OK);

    /* Reads: null, too small, stale. */
    EXPECT(pliant_body_vertex_count(world, cube, NULL), NUL);
    EXPECT(pliant_body_vertex_count(world, removed, &count), STALE);
    EXPECT(pliant_body_vertex_count(gone, cube, &count), STALE);
    EXPECT(pliant_body_vertex_count(world, cube, &count), OK);
    EXPECT(pliant_body_read_positions(world, cube, buf, 2, &count), PLIANT_STATUS_BUFFER_TOO_SMALL);
    checks++;
    if (count != 27) failures++, printf("a too-small read reported %zu vertices, expected 27\n", count);
    EXPECT(pliant_body_read_positions(world, cube, NULL, 27, NULL), NUL);
    EXPECT(pliant_body_read_positions(world, removed, buf, 4096, NULL), STALE);
    EXPECT(pliant_body_read_positions(gone, cube, buf, 4096, NULL), STALE);
    EXPECT(pliant_body_read_velocities(world, cube, buf, 0, &count), PLIANT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(pliant_body_read_velocities(world, removed, buf, 4096, NULL), STALE);
    EXPECT(pliant_body_read_velocities(gone, cube, buf, 4096, NULL), STALE);
    EXPECT(pliant_body_read_surface(world, cube, tri, 1, &count), PLIANT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(pliant_body_read_surface(world, cube, NULL, 64, NULL), NUL);
    EXPECT(pliant_body_read_surface(world, removed, tri, 64, NULL), STALE);
    EXPECT(pliant_body_read_surface(gone, cube, tri, 64, NULL), STALE);
    EXPECT(pliant_body_read_render_positions(world, cube, buf, 4096, NULL), BAD); /* none set */
    EXPECT(pliant_body_read_render_normals(world, cube, buf, 4096, NULL), BAD);
    float render_x[9] = {-0.05f, 0, 0, 0.05f, 0, 0, 0, 0.05f, 0};
    uint32_t render_bad[3] = {0, 1, 3};
    EXPECT(pliant_body_set_render_mesh(world, cube, render_x, 3, render_bad, 1), BAD);
    EXPECT(pliant_body_set_render_mesh(world, cube, NULL, 3, tri_ok, 1), NUL);
    render_x[0] = nan;
    EXPECT(pliant_body_set_render_mesh(world, cube, render_x, 3, tri_ok, 1), BAD);
    render_x[0] = -0.05f;
    EXPECT(pliant_body_set_render_mesh(world, removed, render_x, 3, tri_ok, 1), STALE);
    EXPECT(pliant_body_set_render_mesh(gone, cube, render_x, 3, tri_ok, 1), STALE);
    float far_x[9] = {10.0f, 0, 0, 10.05f, 0, 0, 10.0f, 0.05f, 0};
    EXPECT(pliant_body_set_render_mesh(world, cube, far_x, 3, tri_ok, 1), BAD); /* world coordinates */
    EXPECT(pliant_world_add_cloth_grid(world, &fabric, size2, cells2, &cloth), OK);
    EXPECT(pliant_body_set_render_mesh(world, cloth, render_x, 3, tri_ok, 1), BAD); /* a cloth */
    EXPECT(pliant_world_remove_body(world, cloth), OK);
    EXPECT(pliant_body_set_render_mesh(world, cube, render_x, 3, tri_ok, 1), OK);
    EXPECT(pliant_body_read_render_positions(world, cube, buf, 2, &count), PLIANT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(pliant_body_read_render_positions(world, removed, buf, 3, NULL), STALE);
    EXPECT(pliant_body_read_render_positions(gone, cube, buf, 3, NULL), STALE);
    EXPECT(pliant_body_read_render_normals(world, cube, NULL, 3, NULL), NUL);
    EXPECT(pliant_body_read_render_normals(world, removed, buf, 3, NULL), STALE);
    EXPECT(pliant_body_read_render_normals(gone, cube, buf, 3, NULL), STALE);

    /* After all that, the world still steps: the cube falls onto the ground, no NaN. */
    for (int i = 0; i < 30; i++) {
        EXPECT(pliant_world_step(world, &report), OK);
        if (report.nan_detected) failures++, printf("step %d: NaN\n", i);
    }
    EXPECT(pliant_world_island(world, 0, NULL), NUL);
    EXPECT(pliant_world_island(world, report.islands, &island), BAD);
    EXPECT(pliant_world_island_bodies(world, 0, NULL, 0, &count), PLIANT_STATUS_BUFFER_TOO_SMALL);
    EXPECT(pliant_world_time(world, &t, &frame), OK);
    EXPECT(pliant_body_read_positions(world, cube, buf, 4096, &count), OK);
    for (size_t i = 0; i < 3 * count; i++) {
        if (!isfinite(buf[i])) {
            failures++;
            printf("position %zu is not finite\n", i);
            break;
        }
    }
    EXPECT(pliant_body_read_render_normals(world, cube, buf, 3, &count), OK);
    EXPECT(pliant_world_poll_event(world, &event, &has), OK);
    EXPECT(pliant_world_destroy(world), OK);
    EXPECT(pliant_world_step(world, NULL), STALE);

    printf("%d checks, %d failed; frame %llu at t = %.3f s\n", checks, failures, (unsigned long long)frame, t);
    return failures == 0 ? 0 : 1;
}
